"""The parts of the docs that are generated from the code (the option tables).

    python -m promptgen.docsgen docs/options.md     # write them anew

A test fails when a generated section is stale.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from promptgen.options import OPTION_FIELDS, bounds, effort_table, shown


def options_table() -> str:
    """Every option as a Markdown table: flag, frontmatter key, default, accepted
    values (from the option's declared bounds), meaning."""
    rows = [
        "| option | flag | frontmatter | default | accepted | meaning |",
        "|---|---|---|---|---|---|",
    ]
    for field in OPTION_FIELDS:
        flag = field.flag
        if field.name == "cache":
            flag = "--no-cache"
        elif flag and field.annotation in (bool, bool | None) and field.path[0] != "run":
            flag = f"{flag}/--no-{flag[2:]}"
        if field.opt.presets is not None:
            default = "preset"
        elif field.default in (None, [], {}):
            default = "-"
        else:
            default = shown(field.default)
        help_text = field.opt.help or f"extra instructions for the {field.path[-1]} stage"
        cells = [
            f"`{field.name}`",
            f"`{flag}`" if flag else "(set by `--tests FILE`)",
            f"`{field.opt.key}`" if field.opt.key else "-",
            default,
            bounds(field) or "-",
            help_text.replace("|", "\\|"),
        ]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


GENERATED: dict[str, Callable[[], str]] = {
    "effort-table": effort_table,
    "options-table": options_table,
}


def _markers(name: str) -> tuple[str, str]:
    return f"<!-- generated: {name} -->\n", f"<!-- end: {name} -->"


def generated_sections(text: str) -> dict[str, str]:
    """The text between `<!-- generated: NAME -->` and `<!-- end: NAME -->` lines."""
    found = {}
    for name in GENERATED:
        start, end = _markers(name)
        if start in text and end in text:
            found[name] = text.split(start, 1)[1].split(end, 1)[0]
    return found


def refresh(text: str) -> str:
    """`text` with every generated section written anew."""
    for name, make in GENERATED.items():
        start, end = _markers(name)
        if start in text and end in text:
            before, rest = text.split(start, 1)
            after = rest.split(end, 1)[1]
            text = before + start + make() + "\n" + end + after
    return text


def main(paths: list[str]) -> None:
    for name in paths:
        doc = Path(name)
        doc.write_text(refresh(doc.read_text(encoding="utf-8")), encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1:])
