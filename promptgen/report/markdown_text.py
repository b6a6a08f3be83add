"""Escaping for report.md: untrusted text as paragraphs, table cells and code blocks.

Everything taken from the context is untrusted text: outside code blocks it is escaped
so it can neither break a table nor inject markup or links into the rendered page.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

_SPECIAL = re.compile(r"([\\`*_\[\]|#])")


def text(value: object) -> str:
    """Untrusted text for a Markdown paragraph or list item, on one line."""
    escaped = str(value).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return " ".join(_SPECIAL.sub(r"\\\1", escaped).split())


def cell(value: object) -> str:
    """Untrusted text for a table cell: escaped, line breaks kept as <br>."""
    return "<br>".join(text(line) for line in str(value).splitlines()) or " "


def fenced(body: str, lang: str = "text") -> str:
    """A code block whose fence is longer than any backtick run inside it."""
    longest = max((len(m) for m in re.findall(r"`+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{lang}\n{body.rstrip()}\n{fence}"


def table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A table from already escaped cells."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)
