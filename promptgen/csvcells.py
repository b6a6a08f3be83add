"""CSV cells a spreadsheet opens as text: every CSV promptgen writes goes through `cell`.

A cell starting with `=`, `+`, `-`, `@`, a tab or a carriage return is a formula to
Excel, LibreOffice and Google Sheets (CSV injection, OWASP): a test value from a prompt
file or a model could run one on the machine of whoever opens the file. Such a cell is
written with a single quote in front, which the spreadsheet shows as text; a plain number
(`-0.5`, `+3`) is left as it is.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def cell(value: Any) -> Any:
    """`value` as a spreadsheet reads it as written: text starting like a formula gets a
    leading `'`; anything else (numbers, other text) is returned unchanged."""
    formula = isinstance(value, str) and value.startswith(FORMULA_START)
    return "'" + value if formula and not _NUMBER.fullmatch(value) else value


def row(values: Iterable[Any]) -> list[Any]:
    """Every cell of a row through `cell`."""
    return [cell(v) for v in values]
