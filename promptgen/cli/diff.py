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
from promptgen.history import CONTEXT_FILE, find
from promptgen.progress import print_warnings, results_output
from promptgen.report.diff import diff_contexts
from promptgen.report.diff_view import DIFF_FILE, print_diff, write_diff

RUN_HELP = (
    "A saved context.json, the output folder holding it, or FOLDER@VERSION: a version "
    "kept in the folder's history (a prefix of its hash; FOLDER@current is the run itself)."
)


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
    then_ctx, then_path, _ = read_run(then, "A")
    now_ctx, now_path, now_home = read_run(now, "B")
    result = diff_contexts(then_ctx, now_ctx, then_path, now_path)
    print_warnings(result.warnings)
    target = out or now_home / DIFF_FILE
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


def read_run(path: Path, label: str) -> tuple[Context, Path, Path]:
    """The context a path names (a file, the folder holding context.json, or
    `FOLDER@VERSION`: a version kept in the folder's history), its file's path, and the
    folder a diff of it is written into (FOLDER for a version). A missing file is bad
    input; so is a file that is not a context, and a version the folder does not keep."""
    folder, version = split_version(path)
    if version is not None:
        try:
            file = find(folder, version)
        except BadInputError as err:
            err.message = f"{label}: {err.message}"
            raise
        return load_context(file), file, folder
    file = path / CONTEXT_FILE if path.is_dir() else path
    if not file.is_file():
        where = "no context.json in this folder" if path.is_dir() else "no such file"
        raise BadInputError(
            f"{label}: {file}: {where}",
            hint="give a context.json a run wrote, its folder, or FOLDER@VERSION",
        )
    try:
        return load_context(file), file, file.parent
    except ContextError:
        if _is_prompt_file(file):
            raise BadInputError(
                f"{label}: {file} is a prompt file, not a run",
                hint="diff compares two runs: give A and B as run folders or their "
                "context.json files",
            ) from None
        raise


def split_version(path: Path) -> tuple[Path, str | None]:
    """`OUT@3f2a` -> (OUT, "3f2a"); a path that exists as given, or holds no `@` after
    a folder that exists, is no version (None)."""
    text = str(path)
    folder, sep, version = text.rpartition("@")
    if not sep or path.exists() or "/" in version or not Path(folder).is_dir():
        return path, None
    return Path(folder), version


def _is_prompt_file(file: Path) -> bool:
    """Whether `file`, which is no saved context, reads as a prompt file."""
    try:
        return detect(file, read_text(file)) in FORMATS
    except BadInputError:
        return False
