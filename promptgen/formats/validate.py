"""Turn pydantic validation errors on frontmatter into one-line, located messages."""

from __future__ import annotations

import datetime
from typing import Any

from pydantic import BaseModel, ValidationError

from promptgen.bounds import printable
from promptgen.errors import PromptFormatError
from promptgen.yamlpos import Path_, line_of

_EXPECTED = {
    "string_type": "a string",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
    "list_type": "a list",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "int_type": "a whole number",
    "int_parsing": "a whole number",
    "float_type": "a number",
    "float_parsing": "a number",
}


def _expected(error: Any) -> str:
    if error["type"] == "literal_error":
        return f"one of {error.get('ctx', {}).get('expected', '')}"
    return _EXPECTED.get(error["type"], error["msg"].lower().removeprefix("input should be "))


def _type_name(value: Any) -> str:
    names = {str: "a string", int: "a number", float: "a number", bool: "true/false"}
    if value is None:
        return "nothing"
    if isinstance(value, (datetime.date, datetime.datetime)):
        return "a date"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return names.get(type(value), type(value).__name__)


def _data_path(data: Any, loc: tuple[Any, ...]) -> tuple[Path_, Any]:
    """Keep only the loc parts that index into `data` (drops union member tags)."""
    path: list[str | int] = []
    node = data
    for part in loc:
        if (isinstance(node, dict) and part in node) or (
            isinstance(node, list) and isinstance(part, int) and part < len(node)
        ):
            node = node[part]
            path.append(part)
    return tuple(path), node


def validate_section(
    model: type[BaseModel], data: Any, *, file: str, lines: dict[Path_, int], what: str
) -> BaseModel:
    try:
        return model.model_validate(data)
    except ValidationError as err:
        errors = err.errors()
        # The deepest located error is the most specific one.
        located = [(_data_path(data, tuple(e["loc"])), e) for e in errors]
        (path, value), first = max(located, key=lambda item: len(item[0][0]))
        same = [e for (p, _), e in located if p == path]
        dotted = printable(".".join(str(p) for p in path) or what)
        if first["type"] == "missing":
            missing = first["loc"][-1]
            message = f"'{dotted}' is missing required key '{printable(missing)}'"
        else:
            expected = sorted({_expected(e) for e in same})
            message = f"'{dotted}' should be {' or '.join(expected)}, got {_type_name(value)}"
        raise PromptFormatError(
            f"{what}: {message}",
            file=file,
            line=line_of(lines, path),
            hint="see docs/formats.md for the accepted keys",
        ) from err


def built_error(
    err: ValidationError, *, file: str, line: int | None, what: str
) -> PromptFormatError:
    """One line for a ValidationError raised while building promptgen's own model from
    values that passed the frontmatter model (a safety net: never a pydantic dump)."""
    first = err.errors()[0]
    dotted = printable(".".join(str(p) for p in first["loc"]) or what)
    value = first.get("input")
    return PromptFormatError(
        f"{what}: '{dotted}' should be {_expected(first)}, got {_type_name(value)}",
        file=file,
        line=line,
        hint="see docs/formats.md for the accepted keys",
    )


def type_error(
    dotted: str, expected: str, value: Any, *, file: str, line: int | None, what: str
) -> PromptFormatError:
    """`'metadata.tags' should be a list of strings, got a number` with its line."""
    return PromptFormatError(
        f"{what}: '{printable(dotted)}' should be {expected}, got {_type_name(value)}",
        file=file,
        line=line,
        hint="see docs/formats.md for the accepted keys",
    )
