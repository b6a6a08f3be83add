"""Tables printed to the terminal that read at 80 columns and in pipes.

Names (models, LVEs, test ids) and numbers are never cut nor broken: their columns do
not wrap. Text columns (rules, outputs) wrap at words. A table whose names and numbers
do not fit the width is printed in a narrow form instead: a row's first cell as a
heading, then its other cells as `column value` pairs, a pair never split.
The files (Markdown, CSV) keep every column; this is only how the terminal shows them.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from rich import box
from rich.console import Console
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from promptgen.bounds import terminal_text

Cell = str | Text


def print_table(
    title: str | None,
    header: Sequence[str],
    rows: Sequence[Sequence[Cell]],
    *,
    wrap: Collection[str] = (),
    right: Collection[str] = (),
    console: Console | None = None,
) -> None:
    """Print rows under `header`: the columns named in `wrap` wrap at words, every other
    column is never cut; numbers in the columns named in `right` are right-aligned."""
    console = console or Console()
    cells = [[_text(value) for value in row] for row in rows]
    grid = Table(
        title=title,
        title_justify="left",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        padding=(0, 1, 0, 0),  # with the space between columns: two spaces apart
        pad_edge=False,
    )
    for index, name in enumerate(header):
        if name in wrap:
            grid.add_column(Text(name), overflow="fold")
            continue
        widest = max([_widest(Text(name)), *(_widest(row[index]) for row in cells)])
        grid.add_column(
            Text(name),
            no_wrap=True,
            min_width=widest,
            justify="right" if name in right else "left",
        )
    for row in cells:
        grid.add_row(*row)
    needed = Measurement.get(console, console.options.update_width(10_000), grid).minimum
    if needed <= console.width:
        console.print(grid)
        console.print()
        return
    if title:
        console.print(Text(title))
    for row in cells:
        console.print(row[0])
        named = zip(header[1:], row[1:], strict=True)
        pairs = [Text.assemble(name.replace("\n", " "), " ", value) for name, value in named]
        for line in _packed(pairs, console.width - 2):
            console.print(Text.assemble("  ", line), soft_wrap=True)


def _packed(pairs: list[Text], width: int) -> list[Text]:
    """`column value` pairs joined by "; " into lines of at most `width`, a pair never
    split (one longer than the width has a line of its own)."""
    lines: list[Text] = []
    for pair in pairs:
        if lines and len(lines[-1]) + 2 + len(pair) <= width:
            lines[-1].append("; ")
            lines[-1].append_text(pair)
        else:
            lines.append(pair.copy())
    return lines


def _text(value: Cell) -> Text:
    """A cell; text from files or a saved run shows its control characters, never
    sends them to the terminal."""
    if isinstance(value, Text):
        return (
            value
            if value.plain == terminal_text(value.plain)
            else Text(terminal_text(value.plain), style=value.style)
        )
    return Text(terminal_text(value))


def _widest(text: Text) -> int:
    return max((len(line) for line in text.plain.splitlines()), default=0)
