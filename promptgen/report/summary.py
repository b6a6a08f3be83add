"""A batch's summary: one row per prompt and model, as `summary.csv` and `summary.md`.

Columns: prompt (its output folder's name), file, model, status, tests, invalid (tests
the validity judge rejected), unsafe (tests the safety judge flagged), runs, errors,
undecided (a metric or check that could not decide on a run, counted per run and metric;
each is listed under "Undecided" with its reason), compliance (%), the average of every
metric any prompt has, and the prompt's exit code.
A prompt evaluated on no model has one row with an empty model (its tests are the tests
generated); a prompt whose models were named and ran no test (status `not evaluated`)
has one row per model with 0 tests and 0 runs; a prompt that failed before running has
one row with its error.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.text import Text

from promptgen.bounds import terminal_text
from promptgen.csvcells import cell
from promptgen.report.findings import count_tests
from promptgen.report.overview import (
    ALL_SCENARIOS,
    BASE_COLUMNS,
    USAGE_COLUMNS,
    format_cell,
    overview,
)
from promptgen.report.stats import undecided_groups
from promptgen.report.terminal import print_table
from promptgen.secrets import scrub

FIXED = ["prompt", "file", "model", "status", "tests", "runs", "errors", "undecided", "compliance"]
COLUMNS = [*FIXED[:5], "invalid", "unsafe", *FIXED[5:]]
CODE = "exit_code"
TERMINAL = ["prompt", "model", "status", "tests", "runs", "errors", "undecided", "compliance", CODE]
UNDECIDED = "undecided"  # in the terminal only where a metric could not decide
SHOWN = {CODE: "exit"}
EXIT_RULE = (
    "The batch's exit code is the highest of its prompts' codes: 0 ok, 1 below "
    "--fail-under or a regression past --fail-on-regression, 2 bad input, 3 runtime or "
    "provider failure, 130 interrupted."
)


@dataclass
class Entry:
    """What the summary needs of one prompt of a batch."""

    prompt: str
    file: str
    status: str
    code: int
    ctx: Any = None  # its Context, when it ran
    error: str | None = None
    notes: list[str] = field(default_factory=list)
    models: tuple[str, ...] = ()  # named, when no test ran on them ("not evaluated")


def summary_rows(entries: Iterable[Entry]) -> tuple[list[str], list[dict[str, Any]]]:
    """The columns, and one row per (prompt, model) with numbers as numbers (NaN: none)."""
    rows: list[dict[str, Any]] = []
    metrics: dict[str, None] = {}
    skip = {*BASE_COLUMNS, *USAGE_COLUMNS}
    for entry in entries:
        base: dict[str, Any] = {"prompt": entry.prompt, "file": entry.file, "status": entry.status}
        base[CODE] = entry.code
        ctx = entry.ctx
        if ctx is not None:
            counts = count_tests(ctx)
            base["invalid"], base["unsafe"] = counts.invalid, counts.unsafe
        frame = overview(ctx) if ctx is not None and ctx.test_runs else None
        if (frame is None or frame.empty) and entry.models:  # nothing ran on them
            rows += [{**base, "model": m, "tests": 0, "runs": 0, "errors": 0} for m in entry.models]
            continue
        if frame is None or frame.empty:
            tests = len(ctx.tests) if ctx is not None else 0
            rows.append(
                {**base, "model": "", "tests": tests, "runs": 0, "errors": 0, "undecided": 0}
            )
            continue
        for record in frame[frame["scenario"] == ALL_SCENARIOS].to_dict("records"):
            extra = {str(k): v for k, v in record.items() if k not in skip}
            metrics.update(dict.fromkeys(extra))
            rows.append({**base, **{k: record[k] for k in FIXED if k in record}, **extra})
    return [*COLUMNS, *metrics, CODE], rows


def _number(value: Any) -> Any:
    if isinstance(value, float):
        return "" if math.isnan(value) else f"{value:.6g}"
    return "" if value is None else value


def summary_csv(entries: Iterable[Entry]) -> str:
    columns, rows = summary_rows(entries)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
    writer.writerow({c: cell(c) for c in columns})  # the header row
    for row in rows:
        writer.writerow({c: cell(_number(row.get(c))) for c in columns})
    return buffer.getvalue()


def _cell(column: str, value: Any) -> str:
    if value is None or value == "":
        return "-"
    if column == "compliance" and isinstance(value, float) and not math.isnan(value):
        return f"{value:.1f}%"
    text = format_cell(column, value)
    return text.replace("|", "\\|").replace("\n", " ")


def summary_markdown(
    entries: list[Entry], code: int, skipped: list[tuple[str, str]], others: int = 0
) -> str:
    columns, rows = summary_rows(entries)
    failed = [e for e in entries if e.error]
    lines = [
        "# promptgen batch summary",
        "",
        f"{len(entries)} prompt(s), {len(failed)} with an error; exit code {code}.",
        "",
        "| " + " | ".join(columns) + " |",
        "|" + "---|" * len(columns),
    ]
    lines += ["| " + " | ".join(_cell(c, r.get(c)) for c in columns) + " |" for r in rows]
    lines += ["", EXIT_RULE, *_sections(entries, skipped, others)]
    return "\n".join(lines) + "\n"


def _sections(entries: list[Entry], skipped: list[tuple[str, str]], others: int) -> list[str]:
    """The errors, notes and skipped files, as Markdown lists under their headings."""
    lines: list[str] = []
    failed = [e for e in entries if e.error]
    if failed:
        lines += ["", "## Errors", ""]
        lines += [f"- `{e.prompt}` ({e.file}), exit {e.code}: {e.error}" for e in failed]
    blank = [(e, g) for e in entries if e.ctx is not None for g in undecided_groups(e.ctx)]
    if blank:
        lines += ["", "## Undecided", ""]
        lines += [f"- `{e.prompt}`: {g.line()}" for e, g in blank]
    notes = [(e, n) for e in entries for n in e.notes]
    if notes:
        lines += ["", "## Notes", ""]
        lines += [f"- `{e.prompt}`: {n}" for e, n in notes]
    if skipped or others:
        lines += ["", "## Skipped files", ""]
        if skipped:
            lines += [f"{len(skipped)} file(s) skipped:", ""]
        lines += [f"- {path}: {reason}" for path, reason in skipped]
        if others:
            lines.append(f"- and {others} other file(s) of types no format reads")
    return lines


def print_summary(
    entries: list[Entry],
    code: int,
    skipped: list[tuple[str, str]],
    others: int = 0,
    console: Console | None = None,
) -> None:
    """The summary as the terminal shows it: the columns a reader scans first (every
    column is in summary.md and summary.csv), names never cut, and the same lists."""
    console = console or Console()
    _, rows = summary_rows(entries)
    failed = sum(bool(e.error) for e in entries)
    console.print(
        Text(
            f"promptgen batch: {len(entries)} prompt(s), {failed} with an error; exit code {code}."
        ),
        soft_wrap=True,
    )
    shown = [c for c in TERMINAL if c != UNDECIDED or any(r.get(UNDECIDED) for r in rows)]
    header = [SHOWN.get(c, c) for c in shown]
    cells = [[_shown(_cell(c, r.get(c)).replace("\\|", "|")) for c in shown] for r in rows]
    print_table(None, header, cells, right=header[3:], console=console)
    tail = [EXIT_RULE, *_sections(entries, skipped, others)]
    for line in tail:
        console.print(Text(_shown(line.removeprefix("## "))))


def _shown(text: str) -> str:
    # As in the files: a key an error echoed is blanked; on a terminal, controls shown.
    return terminal_text(scrub(text, shapes=False))


def write_summary(
    folder: Path,
    entries: list[Entry],
    code: int,
    skipped: list[tuple[str, str]],
    others: int = 0,
) -> list[Path]:
    """Write summary.md and summary.csv into `folder`; return their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in (
        ("summary.md", summary_markdown(entries, code, skipped, others)),
        ("summary.csv", summary_csv(entries)),
    ):
        path = folder / name
        path.write_text(scrub(text, shapes=False), encoding="utf-8")
        written.append(path)
    return written
