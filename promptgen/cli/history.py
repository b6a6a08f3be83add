"""`promptgen history OUT`: the versions of a prompt's run kept in its output folder, with
their date, tests and compliance per model (docs/iterate.md). Calls no model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from promptgen.errors import BadInputError
from promptgen.progress import results_output
from promptgen.report.versions import no_runs, print_versions, version_rows


def history(
    out: Annotated[
        Path, typer.Argument(metavar="OUT", help="The output folder of a prompt's run.")
    ],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List the versions of a prompt's run kept in OUT, oldest first: the short hash of
    each version of the prompt, when its run finished, its tests and its compliance per
    model. Compare two with `promptgen diff OUT@VERSION OUT@VERSION`."""
    rows = version_rows(out) if out.is_dir() else []
    if not rows:
        raise BadInputError(
            no_runs(out), hint="give the output folder of a run, e.g. promptgen-out/<prompt>"
        )
    with results_output():
        if as_json:
            typer.echo(json.dumps([r.as_json() for r in rows], indent=2, ensure_ascii=False))
        else:
            print_versions(rows, out)
