"""`--help` that reads at any width, 80 columns and pipes included.

Typer's rich help puts `--flag`, `--no-flag` and the type in columns of their own, which
at 80 columns leave the description no room, so rich cuts long flag names
(`--max-rules-per-te…`) and descriptions; and in the command list it keeps a docstring's
line breaks, breaking descriptions mid-sentence. Here each flag's names share one column
that is never cut (`--no-flag` under `--flag`), descriptions wrap and never end in `…`, and
descriptions are reflowed as the paragraphs they are (a Markdown table's lines are kept).

Typer (pinned below 0.30) loads its rich help module only to print help, and so does
this: `install()` wraps the commands' `format_help`, which adjusts that module on first
use, so start-up never imports rich.
"""

from __future__ import annotations

import inspect
from typing import Any

from typer.core import TyperCommand, TyperGroup

_done = {"wrapped": False, "patched": False}


def install() -> None:
    """Route every Typer command's and group's help through `_readable`."""
    if _done["wrapped"]:
        return
    _done["wrapped"] = True
    for cls in (TyperCommand, TyperGroup):
        _wrap(cls)


def _wrap(cls: Any) -> None:
    original = cls.format_help

    def format_help(self: Any, ctx: Any, formatter: Any) -> Any:
        _readable()
        return original(self, ctx, formatter)

    cls.format_help = format_help


def reflow(text: str) -> str:
    """Paragraphs (split at blank lines) with their single line breaks made spaces; a
    paragraph whose lines all start with `|` (a table) or one marked `\\b` is kept."""
    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(
        p
        if p.startswith("\b") or all(line.startswith("|") for line in p.splitlines())
        else " ".join(p.split("\n"))
        for p in paragraphs
    )


def _readable() -> None:
    if _done["patched"]:
        return
    _done["patched"] = True
    from typer import rich_utils

    make_command_help = rich_utils._make_command_help

    def command_help(*, help_text: str, markup_mode: Any) -> Any:
        return make_command_help(help_text=reflow(help_text), markup_mode=markup_mode)

    def fix_linebreaks(paragraphs: list[str], markup_mode: Any) -> str:
        return reflow("\n\n".join(paragraphs))

    rich_utils._make_command_help = command_help
    rich_utils._fix_linebreaks = fix_linebreaks
    rich_utils._print_options_panel = _options_panel


def _options_panel(
    *, name: str, params: list[Any], ctx: Any, markup_mode: Any, console: Any
) -> None:
    """One panel of options or arguments: names (never cut), type, description (wraps)."""
    from rich.console import Group
    from rich.panel import Panel
    from rich.table import Table
    from rich.text import Text
    from typer import rich_utils
    from typer.core import TyperArgument

    if not params:
        return
    rows: list[list[Any]] = []
    for param in params:
        long_names = [o for o in param.opts if o.startswith("--")]
        short_names = [o for o in param.opts if not o.startswith("--")]
        if isinstance(param, TyperArgument):
            display = param.display_name_raw
            if param.metavar is None and param.nargs != 1:
                display += "..."
            long_names, short_names = [display], []
        negative = [o for o in param.secondary_opts if o.startswith("--")]
        names = rich_utils.highlighter(Text("\n".join(long_names)))
        if negative:
            names.append("\n")
            names.append_text(rich_utils.negative_highlighter(Text("\n".join(negative))))
        kind = Text(style=rich_utils.STYLE_TYPES, overflow="fold")
        shown_type = param.display_type_rich(ctx=ctx)
        if shown_type is not None:
            kind.append(shown_type)
        number_range = param._get_number_range_help_str()
        if number_range:
            kind.append(rich_utils.RANGE_STRING.format(number_range))
        parts = rich_utils._get_parameter_help(
            param=param, ctx=ctx, markup_mode=markup_mode
        ).renderables
        texts = [part for part in parts if isinstance(part, Text)]
        if len(texts) == len(parts):
            description: Any = Text(" ").join(texts)
            description.overflow = "fold"
        else:
            description = Group(*parts)
        required = Text(rich_utils.REQUIRED_SHORT_STRING, style=rich_utils.STYLE_REQUIRED_SHORT)
        rows.append(
            [
                required if param.required else "",
                names,
                rich_utils.highlighter(Text(",".join(short_names))),
                rich_utils.types_highlighter(kind),
                description,
            ]
        )
    table = Table(
        highlight=True,
        show_header=False,
        expand=True,
        box=None,
        show_lines=rich_utils.STYLE_OPTIONS_TABLE_SHOW_LINES,
        leading=rich_utils.STYLE_OPTIONS_TABLE_LEADING,
        pad_edge=rich_utils.STYLE_OPTIONS_TABLE_PAD_EDGE,
        padding=rich_utils.STYLE_OPTIONS_TABLE_PADDING,
    )
    with_required = any(param.required for param in params)
    if with_required:
        table.add_column(no_wrap=True)
    table.add_column(no_wrap=True)  # the flag names: never cut
    table.add_column(no_wrap=True)
    table.add_column(no_wrap=True)
    table.add_column(ratio=1)  # the description takes what is left, wrapped
    for row in rows:
        table.add_row(*(row if with_required else row[1:]))
    console.print(
        Panel(
            table,
            border_style=rich_utils.STYLE_OPTIONS_PANEL_BORDER,
            title=name,
            title_align=rich_utils.ALIGN_OPTIONS_PANEL,
        )
    )
