"""`promptgen lve COMMAND`: commands for LVE tests (lve-org/lve). Each command is one
function registered on `app`; the work is done in the library (docs/lve.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from promptgen.cli.lve_run import RUN_HELP, run_command
from promptgen.evaluation.lve_replay import ReplayReport, replay
from promptgen.progress import print_warnings
from promptgen.report.terminal import print_table

app = typer.Typer(
    name="lve",
    help="Commands for LVE tests (lve-org/lve): replay their recorded instances, or run "
    "them on models.",
    no_args_is_help=True,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


REPLAY_HELP = (
    "Check every recorded instance (instances/*.jsonl) again with promptgen's LVE checkers "
    "and compare with the verdict LVE recorded. Calls no model. Exit 0 when it ran "
    "(disagreements are findings, not errors), 2 for bad input."
)


@app.command("replay", help=REPLAY_HELP)
def replay_command(
    paths: Annotated[
        list[Path],
        typer.Argument(
            help="An LVE's test.json, its folder, or any folder (walked for test.json files, "
            "e.g. LVE's repository/).",
            show_default=False,
        ),
    ],
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the results as JSON (every finding).")
    ] = False,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="List every disagreement with file:line.")
    ] = False,
) -> None:
    """Replay LVE tests (see REPLAY_HELP)."""
    report = replay(paths)
    print_warnings(report.warnings)
    for note in report.notes:  # listed, then gone when read: skipped, not an error
        typer.echo(f"promptgen: note: {note}", err=True)
    if as_json:
        typer.echo(json.dumps(report.to_dict(), indent=2, ensure_ascii=False))
        return
    print_replay(report, verbose)


def print_replay(report: ReplayReport, verbose: bool) -> None:
    header = ["LVE and its checker", "instances", "agree", "disagree", "errors", "not\nbuilt in"]
    rows: list[list[str | Text]] = []
    for lve in report.lves:
        counts = (lve.instances, lve.agreed, len(lve.disagreements), len(lve.errors))
        label = Text.assemble(lve.label, "\n", (lve.checker, "dim"))
        rows.append([label, *map(str, counts), str(lve.not_built_in)])
    print_table("LVE replay", header, rows, right=header[1:])
    if verbose:
        for finding in report.disagreements:
            typer.echo(
                f"disagree: {finding.where}: recorded passed={finding.recorded}, "
                f"replayed {finding.replayed}: {finding.reason}"
            )
    for finding in report.errors:  # each one is a problem to fix: always listed
        typer.echo(f"not checked: {finding.where}: {finding.reason}")
    typer.echo(report.summary())
    if report.disagreements and not verbose:
        typer.echo("(-v lists every disagreement with its file and line)")


app.command("run", help=RUN_HELP)(run_command)
