"""`promptgen history OUT` as people read it: one row per version of the prompt's run kept
in the output folder (promptgen/history.py), oldest first, the current one last.

Compliance per model is the overview's "(all)" row, as in the reports and `promptgen diff`.
Names and summaries come from the contexts: never read as rich markup.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.text import Text

from promptgen.context import Context
from promptgen.history import CONTEXT_FILE, HISTORY, Version, finished_at, versions
from promptgen.report.diff import per_model
from promptgen.report.terminal import print_table
from promptgen.secrets import scrub

DATE = "%Y-%m-%d %H:%M"


@dataclass(frozen=True)
class VersionRow:
    """One version of the run: what `promptgen history` lists."""

    version: str
    current: bool
    date: datetime | None  # when its run last finished a stage (UTC)
    run_id: str
    tests: int
    runs: int
    compliance: dict[str, float | None]  # model -> overall compliance (%)
    previous: str | None  # the version it continued from (None: a run of its own)
    changed: str  # what the edit changed, as said when the run continued
    path: Path

    def as_json(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "current": self.current,
            "date": self.date.isoformat() if self.date else None,
            "run_id": self.run_id,
            "tests": self.tests,
            "runs": self.runs,
            "compliance": self.compliance,
            "previous": self.previous,
            "changed": self.changed,
            "path": str(self.path),
        }


def version_rows(out: Path) -> list[VersionRow]:
    """Every version kept in `out`, oldest first (empty: no run there)."""
    return [_row(version, ctx) for version, ctx in versions(out)]


def _row(version: Version, ctx: Context) -> VersionRow:
    figures = per_model(ctx) if ctx.test_runs else {}
    edit = ctx.edit
    return VersionRow(
        version=version.version,
        current=version.current,
        date=finished_at(ctx),
        run_id=ctx.run_id,
        tests=len(ctx.tests),
        runs=len(ctx.test_runs),
        compliance={m: figures.get(m, {}).get("compliance") for m in ctx.models_run},
        previous=edit.previous if edit else None,
        changed=(edit.what or ", ".join(edit.changed)) if edit else "",
        path=version.path,
    )


def no_runs(out: Path) -> str:
    """Why `out` has no version to list."""
    if not out.is_dir():
        return f"{out}: not a folder" if out.exists() else f"{out}: no such folder"
    return f"{out}: no run here (no {CONTEXT_FILE}, nothing in {HISTORY}/)"


def print_versions(rows: list[VersionRow], out: Path, console: Console | None = None) -> None:
    """The versions as a table: a compliance column per model any version ran on."""
    console = console or Console()
    models = list(dict.fromkeys(m for row in rows for m in row.compliance))
    header = ["version", "date (UTC)", "tests", *models, "changed"]
    cells = [
        [
            row.version + (" (current)" if row.current else ""),
            row.date.strftime(DATE) if row.date else "-",
            str(row.tests),
            *(_percent(row.compliance.get(m)) if m in row.compliance else "-" for m in models),
            _changed(row),
        ]
        for row in rows
    ]
    shown = [[Text(scrub(c, shapes=False)) for c in row] for row in cells]
    print_table(
        "Versions, oldest first",
        header,
        shown,
        wrap=("changed",),
        right=["tests", *models],
        console=console,
    )
    if len(rows) > 1:
        older = rows[-2].version
        line = f"compare two: promptgen diff {out}@{older} {out}@current"
        console.print(Text(scrub(line, shapes=False)), soft_wrap=True)


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}%"


def _changed(row: VersionRow) -> str:
    if row.previous is None:
        return "-"
    return f"since {row.previous}: {row.changed}" if row.changed else f"since {row.previous}"
