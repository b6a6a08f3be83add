"""promptgen.toml read, merged and written back.

A small TOML writer for what a config file holds (tables, strings, numbers, booleans,
arrays, dates): tomllib reads, nothing in the standard library writes. Every key the
user wrote is kept; comments are not (tomllib drops them), which docs/setup.md says.
"""

from __future__ import annotations

import datetime
import math
import re
import tomllib
from pathlib import Path
from typing import Any

from promptgen.errors import BadInputError

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")
_ESCAPES = {
    "\\": "\\\\",
    '"': '\\"',
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\f": "\\f",
    "\r": "\\r",
}


def read_toml(path: Path) -> dict[str, Any]:
    """The file's tables ({} when it does not exist); bad TOML is an error with its line."""
    if not path.is_file():
        return {}
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as err:
        found = re.search(r"at line (\d+)", str(err))  # Python 3.11 has no err.lineno
        line = int(found.group(1)) if found else None
        raise BadInputError(
            f"invalid TOML: {err}", file=path, line=line, hint="fix or move the file, then re-run"
        ) from err
    except UnicodeDecodeError as err:
        raise BadInputError("not UTF-8 text", file=path, hint="fix or move the file") from err


def merge(base: dict[str, Any], updates: dict[str, Any]) -> dict[str, Any]:
    """`base` with `updates` laid over it, table by table; a None value removes its key."""
    merged = dict(base)
    for key, value in updates.items():
        if value is None:
            merged.pop(key, None)
        elif isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def dumps(data: dict[str, Any]) -> str:
    """TOML text that tomllib reads back as `data`."""
    lines: list[str] = []
    _table(data, [], lines)
    return "\n".join(lines).strip("\n") + "\n"


def _table(data: dict[str, Any], path: list[str], lines: list[str]) -> None:
    plain = {k: v for k, v in data.items() if not _is_table(v) and not _is_table_array(v)}
    if path and (plain or not data):
        lines.extend(["", f"[{'.'.join(_key(p) for p in path)}]"])
    lines.extend(f"{_key(k)} = {_value(v)}" for k, v in plain.items())
    for key, value in data.items():
        if _is_table(value):
            _table(value, [*path, key], lines)
        elif _is_table_array(value):
            for item in value:
                lines.extend(["", f"[[{'.'.join(_key(p) for p in [*path, key])}]]"])
                lines.extend(f"{_key(k)} = {_value(v)}" for k, v in item.items())


def _is_table(value: Any) -> bool:
    return isinstance(value, dict)


def _is_table_array(value: Any) -> bool:
    # Arrays of tables as [[name]] only when flat: a nested one stays an inline array.
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(v, dict) and not any(_is_table(x) for x in v.values()) for v in value)
    )


def _key(key: str) -> str:
    return key if _BARE_KEY.match(key) else _string(key)


def _string(text: str) -> str:
    out = []
    for char in text:
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, datetime.datetime | datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"cannot write {type(value).__name__} as TOML")
