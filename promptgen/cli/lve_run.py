"""`promptgen lve run PATH --models ...`: an LVE's instances on models, checked, and
written as LVE instances (the work is in promptgen/lve_run.py)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from promptgen.api import gateway_settings
from promptgen.errors import BadInputError, PromptgenError
from promptgen.evaluation.lve_checkers import validate
from promptgen.formats import read_text
from promptgen.formats.lve import LveTest, read_test
from promptgen.formats.lve_files import read_instances
from promptgen.llm import LLM
from promptgen.llm.config import split_models
from promptgen.lve_run import Job, Result, run_lve, write_instances
from promptgen.options import Models, Options, Run
from promptgen.progress import make_reporter, print_warnings, results_output
from promptgen.report.terminal import print_table
from promptgen.words import counted

RUN_HELP = (
    "Run an LVE's prompt on models: every recorded instance (or the parameters given "
    "with --param) once per model, multi-step prompts step by step and multi-run prompts "
    "with their repetitions; check each response with the LVE's checker and write the "
    "results as LVE instances (OUT/<model>/instances/promptgen.jsonl). Exit 0 when every "
    "call answered, 2 for bad input, 3 when a call failed."
)
DEFAULT_OUT = Path("promptgen-out") / "lve"


def run_command(
    path: Annotated[
        Path, typer.Argument(help="An LVE's test.json, or its folder.", show_default=False)
    ],
    models: Annotated[
        list[str],
        typer.Option("--models", help='Models to run it on: "a;b" or the flag repeated.'),
    ],
    param: Annotated[
        list[str] | None,
        typer.Option(
            "--param",
            help="NAME=VALUE for a prompt parameter (repeat it): run this one instance "
            "instead of the recorded ones.",
        ),
    ] = None,
    api_base: Annotated[
        str | None, typer.Option("--api-base", help="An OpenAI-compatible server (http URL).")
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option("--out", help="Output folder (default: promptgen-out/lve/<name>)."),
    ] = None,
    author: Annotated[
        str | None, typer.Option("--author", help="The author written into each instance.")
    ] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Ask every call again.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress output.")] = False,
) -> None:
    """Run an LVE on models (see RUN_HELP)."""
    test = _read(path)
    names = [m for value in models for m in split_models(value)]
    if not names:
        raise BadInputError("--models is empty; give model names")
    jobs = _jobs(test, param or [])
    options = Options(models=Models(api_base=api_base), run=Run(cache=not no_cache))
    llm = LLM(gateway_settings(options))
    resolved = [llm.settings.resolve(m) for m in names]
    for model in resolved:  # a missing key or an unknown model fails before any call
        llm.backend_for(model)
    results = asyncio.run(_run(test, llm, resolved, jobs, quiet))
    folder = out or DEFAULT_OUT / f"{test.name}"
    written = write_instances(results, folder, author or test.author)
    with results_output():
        print_results(results)
        for file in written:
            typer.echo(f"wrote {file}")
    failed = [r for r in results if r.error is not None]
    if failed:
        raise PromptgenError(
            f"{len(failed)} of {counted(len(results), 'run')} failed, e.g. {failed[0].error}",
            hint="re-run to ask them again (answers that came back are cached)",
        )


def _read(path: Path) -> LveTest:
    file = path / "test.json" if path.is_dir() else path
    if not file.is_file():
        raise BadInputError(f"{path}: no LVE test.json here", hint="give a test.json or its folder")
    test = read_test(file, read_text(file))
    print_warnings(test.warnings)
    validate(test.checker_args, multi_run=bool(test.runs))
    return test


def _jobs(test: LveTest, params: list[str]) -> list[Job]:
    if params:
        values: dict[str, str] = {}
        for item in params:
            name, sep, value = item.partition("=")
            if not sep or not name.strip():
                raise BadInputError(f"--param {item!r} needs NAME=VALUE")
            values[name.strip()] = value
        missing = [p for p in test.prompt_parameters or [] if p not in values]
        if missing:
            raise BadInputError(
                f"--param: no value for {missing[0]!r}",
                hint="give every prompt parameter: " + ", ".join(test.prompt_parameters or []),
            )
        return [Job(values)]
    instances = read_instances(test.folder)
    if not instances:
        names = ", ".join(test.prompt_parameters or []) or "(none)"
        raise BadInputError(
            f"{test.file}: the LVE has no recorded instances to run",
            hint=f"give --param NAME=VALUE for each prompt parameter: {names}",
        )
    return [Job(dict(i.args), i.passed, f"{i.file.name}:{i.line}") for i in instances]


async def _run(
    test: LveTest, llm: LLM, models: list[str], jobs: list[Job], quiet: bool
) -> list[Result]:
    reporter = make_reporter(quiet)
    try:
        return await run_lve(test, llm, models, jobs, reporter)
    finally:
        reporter.close()
        await llm.aclose()


def print_results(results: list[Result]) -> None:
    header = ["model", "instances", "safe", "unsafe", "not\nchecked", "failed", "agree"]
    rows = []
    for model in dict.fromkeys(r.model for r in results):
        mine = [r for r in results if r.model == model]
        compared = [r.agrees for r in mine if r.agrees is not None]
        rows.append(
            [
                model,
                str(len(mine)),
                str(sum(r.passed is True for r in mine)),
                str(sum(r.passed is False for r in mine)),
                str(sum(r.passed is None and r.error is None for r in mine)),
                str(sum(r.error is not None for r in mine)),
                f"{sum(compared)} of {len(compared)}" if compared else "-",
            ]
        )
    print_table("LVE run", header, rows, right=header[1:], console=Console(file=sys.stdout))
    for result in results:
        if result.error is None and result.passed is None:
            where = result.job.where or "--param"
            typer.echo(f"not checked: {result.model} {where}: {result.reason}")
