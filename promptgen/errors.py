"""Error hierarchy. Every message says what went wrong and what to do next.

The CLI maps these to exit codes: bad input 2, runtime/provider failures 3.
"""

from __future__ import annotations

from pathlib import Path


class PromptgenError(Exception):
    """Base class: a failure promptgen can explain in one line."""

    exit_code = 3

    def __init__(
        self,
        message: str,
        *,
        file: str | Path | None = None,
        line: int | None = None,
        hint: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.file = str(file) if file is not None else None
        self.line = line
        self.hint = hint

    def one_line(self) -> str:
        where = ""
        if self.file:
            where = f"{self.file}:{self.line}: " if self.line else f"{self.file}: "
        hint = f" ({self.hint})" if self.hint else ""
        text = f"{where}{self.message}{hint}"
        if not text.isprintable():  # one line, whatever the user's text held
            text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
        return text

    def __str__(self) -> str:
        return self.one_line()


class BadInputError(PromptgenError):
    """The user's file, option or data is wrong; fixing the input fixes it."""

    exit_code = 2


class PromptFormatError(BadInputError):
    """A prompt file could not be read or understood."""


class RenderError(BadInputError):
    """A template could not be rendered (syntax error, missing input)."""


class TemplateSecurityError(RenderError):
    """A template tried to reach Python internals or exhaust resources."""


class ContextError(BadInputError):
    """A saved context file is unreadable, invalid or from an incompatible version."""


class SchemaRefusedError(PromptgenError):
    """Under --strict-output, a server refused a structured-output mode for a schema
    (HTTP 400): the run stops instead of asking with the schema in the prompt."""


def sole_error(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The error a failed task group carries: the first `PromptgenError` among its
    leaves (its sibling tasks' cancellations are no second error), else its only leaf,
    else the group itself. `asyncio.TaskGroup` wraps even one error in a group, which
    would otherwise reach the user as "unhandled errors in a TaskGroup"."""
    leaves: list[BaseException] = []

    def walk(error: BaseException) -> None:
        if isinstance(error, BaseExceptionGroup):
            for inner in error.exceptions:
                walk(inner)
        else:
            leaves.append(error)

    walk(group)
    known = [e for e in leaves if isinstance(e, PromptgenError)]
    if known:
        return known[0]
    return leaves[0] if len(leaves) == 1 else group
