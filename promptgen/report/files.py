"""Write the report files of a run folder: overview.csv, report.md and report.html.

They are always written: without runs they say "no evaluation yet". JUnit XML is not
among them; the CLI writes it only where `--junit FILE` asks.
"""

from __future__ import annotations

from pathlib import Path

from promptgen.context import Context
from promptgen.report.html import report_html
from promptgen.report.markdown import report_markdown
from promptgen.report.outputs import write_outputs
from promptgen.report.overview import overview
from promptgen.report.review import write_review_files

OVERVIEW_FILE = "overview.csv"
MARKDOWN_FILE = "report.md"
HTML_FILE = "report.html"


def write_reports(ctx: Context, folder: Path) -> list[Path]:
    """Write the three report files into `folder`; return their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    csv_path = folder / OVERVIEW_FILE
    overview(ctx).to_csv(csv_path, index=False, float_format="%.6g")
    written = [csv_path]
    for name, text in ((MARKDOWN_FILE, report_markdown(ctx)), (HTML_FILE, report_html(ctx))):
        path = folder / name
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


def write_all(ctx: Context, folder: str | Path) -> None:
    """Everything the main command writes beside context.json: the readable files, the
    reports, and the review files when the tests were reviewed."""
    folder = Path(folder)
    write_outputs(ctx, folder)
    write_reports(ctx, folder)
    gen = ctx.options.generation
    if gen.reviewing:
        write_review_files(ctx, folder, gen.filter_tests)
