"""An index page of every run under a folder (`promptgen view --serve`): prompt, date,
models, compliance figures and a link to each run's report.html.

Run folders are found by their context.json; a context that cannot be read gets a row
that says why instead of stopping the page. Every value is HTML-escaped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from html import escape
from pathlib import Path
from urllib.parse import quote

from promptgen.context import load_context
from promptgen.errors import PromptgenError
from promptgen.report.findings import count_tests
from promptgen.report.html import asset
from promptgen.report.stats import compliance_rate, percent
from promptgen.words import counted

CONTEXT_FILE = "context.json"
REPORT_FILE = "report.html"
INDEX_POLICY = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; "
    "form-action 'none'"
)


@dataclass
class RunEntry:
    """One run folder as the index shows it."""

    folder: Path  # relative to the index root
    saved: datetime
    name: str = ""
    models: list[str] = field(default_factory=list)
    compliance: str = "-"
    per_model: dict[str, str] = field(default_factory=dict)
    tests: str = ""
    has_report: bool = False
    problem: str | None = None


def find_runs(root: Path) -> list[Path]:
    """Every context.json under `root`, the most recently saved first."""
    if not root.is_dir():
        return []
    found = [p for p in root.rglob(CONTEXT_FILE) if p.is_file()]
    return sorted(found, key=lambda p: p.stat().st_mtime, reverse=True)


def run_entry(root: Path, context: Path) -> RunEntry:
    folder = context.parent
    entry = RunEntry(
        folder=folder.relative_to(root),
        saved=datetime.fromtimestamp(context.stat().st_mtime),
        has_report=(folder / REPORT_FILE).is_file(),
    )
    try:
        ctx = load_context(context)
    except (PromptgenError, OSError) as err:
        problem = err.one_line() if isinstance(err, PromptgenError) else str(err)
        entry.name, entry.problem = folder.name, problem
        return entry
    entry.name = ctx.prompt.name
    entry.models = ctx.models_run
    entry.compliance = percent(compliance_rate(ctx.test_runs))
    entry.per_model = {
        m: percent(compliance_rate(r for r in ctx.test_runs if r.model == m))
        for m in ctx.models_run
    }
    entry.tests = count_tests(ctx).headline()
    return entry


def index_entries(root: Path) -> list[RunEntry]:
    return [run_entry(root, path) for path in find_runs(root)]


def index_html(root: Path, entries: list[RunEntry]) -> str:
    """The index page: one row per run, newest first."""
    head = "".join(
        f'<th scope="col">{h}</th>'
        for h in ("Prompt", "Saved", "Models", "Tests", "Compliance", "Per model", "Report")
    )
    rows = "".join(_row(e) for e in entries)
    body = (
        f'<table id="runs"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>'
        if entries
        else '<p class="empty">No runs yet: run <code>promptgen FILE</code> first.</p>'
    )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{escape(INDEX_POLICY)}">\n'
        '<meta name="referrer" content="no-referrer">\n'
        '<link rel="icon" href="data:,">\n'
        "<title>promptgen runs</title>\n"
        f"<style>{asset('report.css')}</style>\n"
        "</head><body>\n"
        f'<header><h1>promptgen runs</h1><p class="meta">{escape(str(root))} · '
        f"{counted(len(entries), 'run')}, newest first</p></header>\n{body}\n</body></html>\n"
    )


def _row(entry: RunEntry) -> str:
    link = quote((entry.folder / REPORT_FILE).as_posix())
    if entry.has_report:
        report = f'<a href="{escape(link)}">report</a>'
    else:
        report = '<span class="none">no report yet</span>'
    per_model = "<br>".join(f"{escape(m)}: {escape(v)}" for m, v in entry.per_model.items())
    name = escape(entry.name)
    if entry.problem:
        name += f'<br><small class="bad">{escape(entry.problem)}</small>'
    return (
        f'<tr data-folder="{escape(entry.folder.as_posix())}">'
        f'<td class="name">{name}<br><small class="meta">{escape(entry.folder.as_posix())}'
        f"</small></td>"
        f'<td class="nowrap">{entry.saved:%Y-%m-%d %H:%M}</td>'
        f"<td>{escape(', '.join(entry.models) or '-')}</td>"
        f"<td>{escape(entry.tests or '-')}</td>"
        f'<td class="compliance">{escape(entry.compliance)}</td>'
        f"<td>{per_model or '-'}</td><td>{report}</td></tr>"
    )
