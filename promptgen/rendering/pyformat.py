"""Python `str.format` templates, as LVE writes them: `{name}` placeholders and `{{`/`}}`
for literal braces; nothing else.

Only plain names are read: `{a.__class__}`, `{a[0]}` and positional `{}` are refused
(str.format would walk attributes of the value), a format spec is kept to a bounded
width, and a conversion may only be `!s` or `!r`.
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from typing import Any

from promptgen.errors import RenderError, TemplateSecurityError

MAX_WIDTH = 10_000
_FORMATTER = string.Formatter()


class MissingInput(KeyError):
    """A placeholder with no value (render.py turns it into "missing input 'x'")."""

    def __init__(self, name: str, line: int | None = None) -> None:
        super().__init__(name)
        self.name, self.line = name, line


def _fields(source: str) -> list[tuple[str, str | None, str | None, str | None]]:
    try:
        return list(_FORMATTER.parse(source))
    except ValueError as err:  # a lone "{" or "}"
        raise RenderError(
            f"template syntax error: {err}", hint="write a literal brace as {{ or }}"
        ) from None


def _check_field(name: str, spec: str | None, conversion: str | None) -> None:
    if not name.isidentifier():
        raise TemplateSecurityError(
            f"placeholder {{{name}}} is not a plain name",
            hint="write {name}; attribute and index access are not supported",
        )
    if conversion not in (None, "s", "r"):
        raise TemplateSecurityError(f"placeholder {{{name}!{conversion}}}: use !s or !r")
    if spec and ("{" in spec or any(p.isdigit() and int(p) > MAX_WIDTH for p in _numbers(spec))):
        raise TemplateSecurityError(f"placeholder {{{name}:{spec}}}: format spec not allowed")


def _numbers(spec: str) -> list[str]:
    out, current = [], ""
    for ch in spec:
        if ch.isdigit():
            current += ch
        elif current:
            out.append(current)
            current = ""
    return [*out, current] if current else out


def variables(source: str) -> list[str]:
    """Placeholder names in order of first use (`{{` escapes are not placeholders)."""
    names: list[str] = []
    for _, name, spec, conversion in _fields(source):
        if name is None:
            continue
        _check_field(name, spec, conversion)
        if name not in names:
            names.append(name)
    return names


def check(source: str) -> None:
    variables(source)


def render(source: str, values: Mapping[str, Any], *, strict: bool = True) -> str:
    """`source.format_map(values)` without its attribute walk; a missing value raises
    MissingInput when `strict`, else the placeholder is kept as written."""
    parts: list[str] = []
    for literal, name, spec, conversion in _fields(source):
        parts.append(literal)
        if name is None:
            continue
        _check_field(name, spec, conversion)
        if name not in values:
            if strict:
                raise MissingInput(name)
            parts.append("{" + name + (f"!{conversion}" if conversion else "") + "}")
            continue
        value = values[name]
        if conversion == "r":
            value = repr(value)
        elif conversion == "s":
            value = str(value)
        try:
            parts.append(format(value, spec or ""))
        except (ValueError, TypeError) as err:
            raise TemplateSecurityError(f"placeholder {{{name}:{spec}}}: {err}") from None
    return "".join(parts)
