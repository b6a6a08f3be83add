"""Read an HTML page's tables and elements back as text, the way a reader sees them."""

from __future__ import annotations

from html.parser import HTMLParser


class _Tables(HTMLParser):
    """Rows of cell texts per table id (entities decoded, tags dropped)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: dict[str, list[list[str]]] = {}
        self.heads: dict[str, list[str]] = {}
        self._stack: list[str] = []  # ids of the open tables (nested ones have no id: "")
        self._row: list[str] | None = None
        self._cell: list[str] | None = None
        self._head = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self._stack.append(dict(attrs).get("id") or "")
        elif tag == "thead":
            self._head = True
        elif tag == "tbody":
            self._head = False
        elif tag == "tr" and self._stack:
            self._row = []
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []
        elif tag == "br" and self._cell is not None:
            self._cell.append(" ")

    def handle_endtag(self, tag: str) -> None:
        if tag == "table" and self._stack:
            self._stack.pop()
        elif tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append("".join(self._cell).strip())
            self._cell = None
        elif tag == "tr" and self._row is not None and self._stack:
            if self._head:
                self.heads[self._stack[-1]] = self._row
            else:
                self.tables.setdefault(self._stack[-1], []).append(self._row)
            self._row = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def table_rows(page: str, table_id: str) -> list[list[str]]:
    """The body rows of the table with this id, each a list of cell texts."""
    parser = _Tables()
    parser.feed(page)
    return parser.tables.get(table_id, [])


def table_column(page: str, table_id: str, header: str) -> list[str]:
    """One column of a table, by its header text."""
    parser = _Tables()
    parser.feed(page)
    index = parser.heads[table_id].index(header)
    return [row[index] for row in parser.tables.get(table_id, [])]
