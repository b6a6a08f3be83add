"""`promptgen mutate FILE|CONTEXT --models M`: would the saved tests notice if someone
broke this prompt? (the work is in promptgen/mutate.py; docs/mutation.md)"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich import box
from rich.console import Console
from rich.table import Table

from promptgen.api import prepare
from promptgen.cli.run import options_from_flags
from promptgen.context import Context
from promptgen.errors import PromptgenError
from promptgen.mutate import MutationSettings, check, dry_plan, mutate_async
from promptgen.options import MAX_MUTANTS, MAX_RUNS_PER_TEST
from promptgen.progress import make_reporter, results_output
from promptgen.report.files import write_reports
from promptgen.report.mutation import MUTATION_FILE, mutation_markdown, score_rows, status_counts

EPILOG = (
    "Mutants: a sentence deleted, a constraint negated, a number or format changed, two "
    "list steps swapped, plus edits the rules model proposes. A mutant is killed when its "
    "results differ from the original's beyond run-to-run noise. Writes mutation.md and "
    "the mutation section of report.md/report.html beside context.json. See docs/mutation.md."
)


def mutate(
    source: Annotated[
        Path, typer.Argument(metavar="FILE|CONTEXT", help="A prompt file or a saved context.json.")
    ],
    models: Annotated[
        list[str] | None,
        typer.Option("--models", help='Models under test: "a;b" or the flag repeated.'),
    ] = None,
    mutants: Annotated[
        int,
        typer.Option(
            "--mutants",
            min=1,
            max=MAX_MUTANTS,
            help="Run at most N mutants (spread over operators).",
        ),
    ] = 20,
    llm_mutants: Annotated[
        int,
        typer.Option(
            "--llm-mutants",
            min=0,
            max=MAX_MUTANTS,
            help="Mutants to ask of the rules model (0: none).",
        ),
    ] = 4,
    runs_per_test: Annotated[
        int | None,
        typer.Option(
            "--runs-per-test",
            min=1,
            max=MAX_RUNS_PER_TEST,
            help="Runs of each test (the noise is measured over them).",
        ),
    ] = None,
    api_base: Annotated[
        str | None, typer.Option("--api-base", help="An OpenAI-compatible server (http URL).")
    ] = None,
    out: Annotated[Path | None, typer.Option("--out", help="Output folder.")] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the planned model calls; call nothing.")
    ] = False,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Ask every call again.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress output.")] = False,
) -> None:
    """Mutation testing: run the saved tests on changed copies of the prompt and report
    the share of mutants they notice (the mutation score), per rule and overall."""
    flags = {
        "models": ";".join(models) if models else None,
        "api_base": api_base,
        "runs_per_test": runs_per_test,
        "out": str(out) if out is not None else None,
        "cache": True if no_cache else None,  # the flag is --no-cache
        "quiet": quiet or None,
    }
    prepared = prepare(source, options_from_flags(flags))
    check(prepared)
    settings = MutationSettings(max_mutants=mutants, llm_mutants=llm_mutants)
    if dry_run:
        planned = dry_plan(prepared, settings)
        with results_output():
            for stage, calls in planned.items():
                typer.echo(f"{stage}: {calls}")
            typer.echo(f"total: {sum(planned.values())} model calls")
        return
    for note in prepared.notes:
        print(f"promptgen: {note}", file=sys.stderr)
    ctx, notes = asyncio.run(
        mutate_async(
            prepared, settings, reporter=make_reporter(quiet), main_reporter=make_reporter(quiet)
        )
    )
    for note in notes:
        print(f"promptgen: {note}", file=sys.stderr)
    target = prepared.out / MUTATION_FILE
    target.write_text(mutation_markdown(ctx), encoding="utf-8")
    write_reports(ctx, prepared.out)
    with results_output():
        print_mutation(ctx)
    print(f"promptgen: wrote {target}", file=sys.stderr)
    _raise_unfinished(ctx)


def print_mutation(ctx: Context) -> None:
    state = ctx.mutation
    if state is None:
        return
    table = Table(title="Mutation score", title_justify="left", box=box.SIMPLE_HEAD)
    for column in ("rule", "killed", "mutants", "score"):
        table.add_column(column, justify="left" if column == "rule" else "right")
    for row in score_rows(ctx):
        table.add_row(*row)
    console = Console(file=sys.stdout)
    console.print(table)
    counts = status_counts(state)
    typer.echo(", ".join(f"{n} {status}" for status, n in counts.items()))
    for mutant in state.mutants:
        verdict = next((v for v in state.verdicts if v.mutant_id == mutant.id), None)
        if verdict is not None and verdict.status == "survived":
            typer.echo(f"survived: {mutant.id} ({mutant.operator}) {mutant.description}")


def _raise_unfinished(ctx: Context) -> None:
    failed = [r for name in ("mutants", "mutant_runs") if (r := ctx.stages.get(name))
              and r.status == "failed"]  # fmt: skip
    if failed:
        raise PromptgenError(
            f"mutation stage {failed[0].name} did not finish: {failed[0].error}",
            hint="re-run the same command to resume (answers that came back are cached)",
        )
