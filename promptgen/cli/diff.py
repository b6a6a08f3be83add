"""`promptgen diff A B`: two saved runs compared, from A (then) to B (now). No model is
called (docs/diff.md)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from promptgen.context import Context, load_context
from promptgen.errors import BadInputError, ContextError
from promptgen.formats import FORMATS, detect, read_text
from promptgen.gate import QualityGateError
from promptgen.progress import print_warnings, results_output
from promptgen.report.diff import diff_contexts
from promptgen.report.diff_view import DIFF_FILE, print_diff, write_diff

RUN_HELP = "A saved context.json, or the output folder holding it."


def diff(
    then: Annotated[Path, typer.Argument(metavar="A", help=f"{RUN_HELP} (then)")],
    now: Annotated[Path, typer.Argument(metavar="B", help=f"{RUN_HELP} (now)")],
    out: Annotated[
        Path | None,
        typer.Option("--out", help=f"Write the Markdown here (default: {DIFF_FILE} beside B)."),
    ] = None,
    fail_on_regression: Annotated[
        float | None,
        typer.Option(
            "--fail-on-regression",
            metavar="PCT",
            min=0,
            help="Exit 1 when a model's compliance or a metric average fell by more than "
            "PCT percentage points.",
        ),
    ] = None,
) -> None:
    """Compare two saved runs: compliance per model and rule, metric averages, tests
    added, removed or changed, runs that flipped between pass and fail. Calls no model."""
    then_ctx, then_path = read_run(then, "A")
    now_ctx, now_path = read_run(now, "B")
    result = diff_contexts(then_ctx, now_ctx, then_path, now_path)
    print_warnings(result.warnings)
    target = out or now_path.parent / DIFF_FILE
    if target.is_dir():
        target = target / DIFF_FILE
    try:
        write_diff(result, target)
    except OSError as err:
        raise BadInputError(
            f"cannot write {target}: {err.strerror or err}", hint="give another --out"
        ) from err
    with results_output():
        print_diff(result)
    print(f"promptgen: wrote {target}", file=sys.stderr)
    if fail_on_regression is not None:
        regressed = result.regressions(fail_on_regression)
        if regressed:
            raise QualityGateError(
                f"regressed by more than {fail_on_regression:g} points: " + "; ".join(regressed)
            )


def read_run(path: Path, label: str) -> tuple[Context, Path]:
    """The context a path names (a file, or the folder holding context.json), and its
    file's path. A missing file is bad input; so is a file that is not a context."""
    file = path / "context.json" if path.is_dir() else path
    if not file.is_file():
        where = "no context.json in this folder" if path.is_dir() else "no such file"
        raise BadInputError(
            f"{label}: {file}: {where}", hint="give a context.json a run wrote, or its folder"
        )
    try:
        return load_context(file), file
    except ContextError:
        if _is_prompt_file(file):
            raise BadInputError(
                f"{label}: {file} is a prompt file, not a run",
                hint="diff compares two runs: give A and B as run folders or their "
                "context.json files",
            ) from None
        raise


def _is_prompt_file(file: Path) -> bool:
    """Whether `file`, which is no saved context, reads as a prompt file."""
    try:
        return detect(file, read_text(file)) in FORMATS
    except BadInputError:
        return False
