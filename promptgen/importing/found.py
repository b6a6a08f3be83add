"""What a code reader found, and the choice of messages from it (Python and JavaScript)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from promptgen.errors import BadInputError
from promptgen.importing.pieces import Imported, Msg, Piece, Var, role_of

_PARAMS = ("temperature", "top_p", "max_tokens", "max_completion_tokens", "seed",
           "frequency_penalty", "presence_penalty", "stop")  # fmt: skip

# Keyword arguments and object keys whose string is a prompt, not a value for one.
TEXT_KEYWORDS = {"template", "prompt", "system", "system_prompt", "instructions", "content",
                 "user", "user_prompt", "messages"}  # fmt: skip


@dataclass
class Candidate:
    name: str | None  # the variable or key it was assigned to
    pieces: list[Piece]
    line: int


@dataclass
class Found:
    strings: list[Candidate] = field(default_factory=list)
    message_lists: list[list[Msg]] = field(default_factory=list)
    constants: dict[str, Any] = field(default_factory=dict)  # name -> int/float/bool/str

    def keyword(self, name: str, value: Any) -> None:
        """`model=`, `temperature=` and friends, where a call or object sets them."""
        if isinstance(value, int | float | str | bool) or (
            name == "stop" and isinstance(value, list)
        ):
            self.constants.setdefault(name, value)


def _vars(pieces: list[Piece]) -> list[str]:
    return [p.name for p in pieces if isinstance(p, Var)]


def _role_named(candidate: Candidate) -> str | None:
    # SYSTEM_PROMPT, user_template, userPrompt, human-message
    name = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", candidate.name or "").lower()
    for part in re.split(r"[_\-]", name):
        role = role_of(part)
        if role:
            return role
    return None


def choose(found: Found, kind: str, file: str) -> Imported:
    """Messages from what was found: a messages list first, else the strings named for a
    role (SYSTEM_PROMPT, user_template), else the longest string."""
    warnings: list[str] = []
    used = {v for c in found.strings for v in _vars(c.pieces)}
    used |= {v for ms in found.message_lists for m in ms for v in m.variables}
    strings = [c for c in found.strings if c.name not in used]  # `name = "Ann"`: a sample
    if found.message_lists:
        messages = max(found.message_lists, key=len)
    else:
        named = [(c, r) for c in strings if (r := _role_named(c))]
        if named:
            messages = [Msg(role, c.pieces) for c, role in named]
        elif strings:
            best = max(strings, key=lambda c: sum(len(p) for p in c.pieces if isinstance(p, str)))
            if len(strings) > 1:
                warnings.append(
                    f"{file}: {len(strings)} strings; took the longest (line {best.line}); "
                    "name them SYSTEM_PROMPT and USER_PROMPT to import both"
                )
            has_vars = any(isinstance(p, Var) for p in best.pieces)
            messages = [Msg("user" if has_vars else "system", best.pieces)]
        else:
            raise BadInputError(
                f"no prompt found in this {kind} file",
                file=file,
                hint="it needs a string literal, a template or a messages list",
            )
    names = {v for m in messages for v in m.variables}
    samples = {k: v for k, v in found.constants.items() if k in names}
    params = {k: found.constants[k] for k in _PARAMS if k in found.constants and k not in names}
    model = found.constants.get("model")
    return Imported(
        kind=kind,
        messages=messages,
        samples=samples,
        parameters=params,
        model=model if isinstance(model, str) and "model" not in names else None,
        warnings=warnings,
    )
