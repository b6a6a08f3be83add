"""Write the report files of a run folder: overview.csv, report.md and report.html (and
changes.md, what an edit of the prompt did: docs/iterate.md).

They are always written: without runs they say "no evaluation yet". JUnit XML is not
among them; the CLI writes it only where `--junit FILE` asks.
"""

from __future__ import annotations

from pathlib import Path

from pandas.api.types import is_numeric_dtype

from promptgen.context import Context
from promptgen.csvcells import cell
from promptgen.report.changes import EditChanges, load_changes
from promptgen.report.changes_view import write_changes
from promptgen.report.html import report_html
from promptgen.report.markdown import report_markdown
from promptgen.report.outputs import write_outputs
from promptgen.report.overview import overview
from promptgen.report.review import write_review_files
from promptgen.secrets import scrub

OVERVIEW_FILE = "overview.csv"
MARKDOWN_FILE = "report.md"
HTML_FILE = "report.html"


def overview_csv(ctx: Context) -> str:
    """overview.csv: the overview table, its text cells safe to open in a spreadsheet."""
    frame = overview(ctx)
    for column in frame.columns:
        if not is_numeric_dtype(frame[column]):
            frame[column] = frame[column].map(cell)
    frame.columns = [cell(str(c)) for c in frame.columns]
    return frame.to_csv(index=False, float_format="%.6g")


def write_reports(ctx: Context, folder: Path, changes: EditChanges | None = None) -> list[Path]:
    """Write the three report files into `folder`; return their paths. `changes`, what
    an edit of the prompt did, opens report.md and report.html."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    documents = (
        (OVERVIEW_FILE, overview_csv(ctx)),
        (MARKDOWN_FILE, report_markdown(ctx, changes)),
        (HTML_FILE, report_html(ctx, changes)),
    )
    for name, text in documents:
        path = folder / name
        # Errors are scrubbed where they are shown; a known key anywhere else (an output
        # that echoes it) is blanked here, as the last line of defence.
        path.write_text(scrub(text, shapes=False), encoding="utf-8")
        written.append(path)
    return written


def write_all(ctx: Context, folder: str | Path, changes: EditChanges | None = None) -> None:
    """Everything the main command writes beside context.json: the readable files, the
    reports, `changes.md` when the prompt was edited (`changes`, else read from the
    folder's history), and the review files when the tests were reviewed."""
    folder = Path(folder)
    if changes is None:
        changes = load_changes(ctx, folder)
    write_outputs(ctx, folder)
    write_reports(ctx, folder, changes)
    write_changes(changes, folder)
    gen = ctx.options.generation
    if gen.reviewing:
        write_review_files(ctx, folder, gen.filter_tests)
