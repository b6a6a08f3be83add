"""`promptgen export CONTEXT.json --to TARGET[,TARGET]`: a saved run, written for eval
platforms. No model is called (docs/exports.md)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from promptgen.context import load_context
from promptgen.errors import BadInputError
from promptgen.export import TARGETS, ExportResult, ExportSettings, parse_targets, write_exports
from promptgen.llm.config import split_models
from promptgen.options import BY_NAME
from promptgen.progress import print_warnings


def _help(name: str) -> str:
    return BY_NAME[name].opt.help


def export(
    context: Annotated[
        Path | None,
        typer.Argument(help="A saved context.json (or the folder holding it).", show_default=False),
    ] = None,
    to: Annotated[
        list[str] | None,
        typer.Option(
            "--to", metavar="TARGETS", help="Targets, comma-separated or repeated (see --list)."
        ),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option("--out", help="Folder to write into (default: exports/ beside the context)."),
    ] = None,
    models: Annotated[
        list[str] | None,
        typer.Option(
            "--models",
            metavar="MODELS",
            help='Models under test to write runs for: "a;b" (default: the run\'s).',
        ),
    ] = None,
    create_eval_runs: Annotated[
        bool, typer.Option("--create-eval-runs", help=_help("create_eval_runs"))
    ] = False,
    in_place: Annotated[bool, typer.Option("--in-place", help=_help("in_place"))] = False,
    list_targets: Annotated[
        bool, typer.Option("--list", help="Name the targets, one line each.")
    ] = False,
) -> None:
    """Write a saved run's tests (and results) for eval platforms: OpenAI Evals, Azure
    OpenAI Evals, GitHub Models, promptfoo, Inspect AI, JSONL, CSV. Calls no model."""
    if list_targets:
        width = max(map(len, TARGETS))
        for target in TARGETS.values():
            typer.echo(f"{target.name.ljust(width)}  {target.summary}")
        return
    if context is None:
        raise BadInputError("which run?", hint="give a saved context.json, or --list")
    if not to:
        raise BadInputError(
            "no export target given", hint="add --to TARGET (promptgen export --list)"
        )
    targets = parse_targets(to)
    path = context / "context.json" if context.is_dir() else context
    if not path.is_file():
        raise BadInputError(
            f"{path}: no such file", hint="give the context.json a run wrote (its --out folder)"
        )
    ctx = load_context(path)
    print_warnings(ctx.prompt.warnings)
    chosen = split_models(models) if models else None
    if models is not None and not chosen:
        raise BadInputError("--models is empty; give model names or drop the flag")
    settings = ExportSettings(models=chosen, in_place=in_place, create_eval_runs=create_eval_runs)
    report_exports(write_exports(ctx, targets, out or path.parent / "exports", settings))


def report_exports(results: list[ExportResult]) -> None:
    """Each target's files on stdout; what it could not carry over on stderr."""
    for result in results:
        typer.echo(f"{result.target}: {len(result.paths)} file(s)")
        for path in result.paths:
            typer.echo(f"  {path}")
        for line in result.notes:
            print(f"promptgen: {result.target}: {line}", file=sys.stderr)
        for line in result.skipped:
            print(f"promptgen: {result.target}: not exported: {line}", file=sys.stderr)
