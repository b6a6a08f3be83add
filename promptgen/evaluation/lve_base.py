"""What an LVE checker is made of, shared by the pattern checkers (lve_checkers.py) and
the ML ones (lve_ml.py), which both import it: the observation a checker sees, its
outcome, its arguments as LVE reads them, and the regex helpers both kinds use."""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import regex

from promptgen.bounds import REGEX_TIMEOUT_SECONDS, printable
from promptgen.errors import BadInputError
from promptgen.rendering.pyformat import MissingInput, render
from promptgen.rendering.restricted import compile_lambda


@dataclass(frozen=True)
class Observation:
    """What a checker sees: the last assistant message (`response`), every assistant
    message by variable name (`variables`) and, for a multi-run prompt, the response of
    each run in order (`responses`)."""

    response: str | None = None
    variables: dict[str, str] = field(default_factory=dict)
    responses: list[Any] | None = None


@dataclass(frozen=True)
class CheckOutcome:
    """safe: LVE's `passed` (None: not checked, `reason` says why); built_in False: the
    checker is custom code, or an ML checker without its extra."""

    safe: bool | None
    reason: str
    built_in: bool = True


Decide = Callable[[dict[str, Any], Observation], CheckOutcome]


def shown(value: Any, limit: int = 80) -> str:
    return printable(repr(value), limit)


class Deferred(Exception):
    """The argument names instance arguments: it can only be checked per instance."""


class TimedOut(Exception):
    """A regex search ran past REGEX_TIMEOUT_SECONDS: the instance is not checked."""


class Args:
    """A checker's arguments, each read as the type LVE's checker expects (a wrong one is
    a BadInputError naming the checker and the argument)."""

    def __init__(self, name: str, values: Mapping[str, Any], deferred: set[str] | None = None):
        self.name, self.values, self.deferred = name, dict(values), deferred or set()

    def _get(self, key: str, ok: Callable[[Any], bool], expected: str) -> Any:
        if key in self.deferred:
            raise Deferred(key)
        value = self.values.get(key)
        if not ok(value):
            raise BadInputError(f"{self.name}: '{key}' should be {expected}, got {shown(value)}")
        return value

    def text(self, key: str) -> str:
        return str(self._get(key, lambda v: isinstance(v, str), "text"))

    def flag(self, key: str) -> bool:
        return bool(self._get(key, lambda v: isinstance(v, bool), "true or false"))

    def number(self, key: str) -> float:
        kind = lambda v: isinstance(v, int | float) and not isinstance(v, bool)  # noqa: E731
        return float(self._get(key, kind, "a number"))

    def choice(self, key: str, options: tuple[Any, ...]) -> Any:
        return self._get(key, lambda v: v in options, "one of " + ", ".join(map(str, options)))

    def lambda_(self, key: str) -> Callable[..., Any]:
        try:
            func = compile_lambda(self.text(key))
        except BadInputError as err:
            raise BadInputError(f"{self.name}: '{key}': {err.message}", hint=err.hint) from None
        # The evaluator refuses these when the lambda runs; said here, a test file that
        # can never work is refused before any model call.
        for node in ast.walk(func.body):
            if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
                raise BadInputError(
                    f"{self.name}: '{key}': names starting with _ are not allowed ({node.attr})"
                )
        return func

    def format(self, key: str, template: str, values: Mapping[str, Any]) -> str:
        """`template.format(**values)`, without str.format's attribute walk."""
        try:
            return render(template, values)
        except MissingInput as err:
            raise BadInputError(
                f"{self.name}: '{key}' uses {{{err.name}}}, which this instance does not give",
                hint="LVE formats checker arguments with the instance's args: give it there, "
                "or write a literal brace as {{ or }}",
            ) from None
        except BadInputError as err:
            raise BadInputError(f"{self.name}: '{key}': {err.message}", hint=err.hint) from None


@dataclass(frozen=True)
class Checker:
    """A checker's constructor arguments (LVE refuses a missing required one and an
    unknown one) and `prepare`, which reads them and returns the decision."""

    prepare: Callable[[Args], Decide]
    required: tuple[str, ...] = ()
    defaults: Mapping[str, Any] = field(default_factory=dict)
    multi_run: bool = False


def text_response(name: str, seen: Observation) -> str:
    """The last assistant message, which LVE's single-response checkers read."""
    if not isinstance(seen.response, str):
        multi = " (a multi-run test: use MultiRunLambdaChecker)" if seen.responses else ""
        raise BadInputError(f"{name} checks one response, and there is none{multi}")
    return seen.response


def compile_regex(a: Args, key: str, flags: int = 0) -> regex.Pattern[str]:
    pattern = a.text(key)
    try:
        return regex.compile(pattern, flags | regex.VERSION0)
    except (regex.error, ValueError, OverflowError, RecursionError) as err:
        raise BadInputError(
            f"{a.name}: '{key}' {shown(pattern)} is not a regex: {err}",
            hint="LVE formats checker arguments first: write a literal brace as {{ or }}",
        ) from None


def search(pattern: regex.Pattern[str], text: str) -> regex.Match[str] | None:
    try:
        return pattern.search(text, timeout=REGEX_TIMEOUT_SECONDS)
    except TimeoutError:
        raise TimedOut(f"/{printable(pattern.pattern, 80)}/ timed out") from None
