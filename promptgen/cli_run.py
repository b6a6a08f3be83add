"""The main command: `promptgen FILE [options]` generates tests for a prompt (or resumes)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from promptgen.errors import PromptgenError
from promptgen.llm import load_settings
from promptgen.options import effort_table
from promptgen.pipeline import failed_stages
from promptgen.progress import print_warnings
from promptgen.run import dry_run_table, execute, options_table, prepare, summary

GEN = "Generation"
MODELS = "Models"
INSTR = "Stage instructions"
RUN = "Run"


def opt(help: str | None = None, panel: str = GEN, *names: str) -> typer.models.OptionInfo:
    return typer.Option(*names, help=help, rich_help_panel=panel)


EPILOG = "Effort presets (a flag or the frontmatter overrides any of them):\n\n" + effort_table()


def run(
    file: Annotated[
        Path,
        typer.Argument(help="A prompt (.prompty, .prompt.yml, .md, .txt) or a saved context.json."),
    ],
    effort: Annotated[str | None, opt("min, low (default), medium or high.", GEN)] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            help="Output folder (default: ./promptgen-out/PROMPT-NAME).", rich_help_panel=RUN
        ),
    ] = None,
    max_rules: Annotated[int | None, opt(panel=GEN)] = None,
    tests_per_rule: Annotated[int | None, opt(panel=GEN)] = None,
    max_rules_per_test_generation: Annotated[int | None, opt(panel=GEN)] = None,
    split_rules: Annotated[bool | None, opt(panel=GEN)] = None,
    test_generations: Annotated[int | None, opt(panel=GEN)] = None,
    test_expansions: Annotated[int | None, opt(panel=GEN)] = None,
    groundedness: Annotated[bool | None, opt(panel=GEN)] = None,
    validity: Annotated[bool | None, opt(panel=GEN)] = None,
    baseline_tests: Annotated[bool | None, opt("Also write zero-shot baseline tests.", GEN)] = None,
    drop_ungrounded: Annotated[
        bool | None,
        opt("Generate no tests for ungrounded rules.", GEN),
    ] = None,
    temperature: Annotated[float | None, opt(panel=GEN)] = None,
    rules_model: Annotated[str | None, opt("Model for analysis and generation.", MODELS)] = None,
    eval_model: Annotated[str | None, opt("Model for groundedness/validity.", MODELS)] = None,
    baseline_model: Annotated[str | None, opt(panel=MODELS)] = None,
    api_base: Annotated[str | None, opt("An OpenAI-compatible server.", MODELS)] = None,
    concurrency: Annotated[int | None, opt("Calls in flight per model [8].", MODELS)] = None,
    instructions_intent: Annotated[str | None, opt(panel=INSTR)] = None,
    instructions_input_spec: Annotated[str | None, opt(panel=INSTR)] = None,
    instructions_output_rules: Annotated[str | None, opt(panel=INSTR)] = None,
    instructions_inverse_output_rules: Annotated[str | None, opt(panel=INSTR)] = None,
    instructions_tests: Annotated[str | None, opt(panel=INSTR)] = None,
    instructions_test_expansion: Annotated[str | None, opt(panel=INSTR)] = None,
    dry_run: Annotated[
        bool,
        opt("Print the planned calls per stage; call nothing.", RUN, "--dry-run"),
    ] = False,
    print_options: Annotated[
        bool,
        opt("Print the resolved options and their sources.", RUN, "--print-options"),
    ] = False,
    fresh: Annotated[
        bool, opt("Discard a saved run in the output folder.", RUN, "--fresh")
    ] = False,
    no_cache: Annotated[bool, opt("Do not use the response cache.", RUN, "--no-cache")] = False,
    quiet: Annotated[bool, opt("No progress output.", RUN, "--quiet", "-q")] = False,
) -> None:
    """Generate tests for FILE (the default command: `promptgen FILE` is enough).

    Extracts the intent, input specification, output rules and inverse rules, checks
    groundedness, generates, expands and validates tests, and writes context.json plus
    readable files. Re-running the same command resumes an interrupted run.
    """
    instructions = {
        stage: text
        for stage, text in (
            ("intent", instructions_intent),
            ("input_spec", instructions_input_spec),
            ("output_rules", instructions_output_rules),
            ("inverse_output_rules", instructions_inverse_output_rules),
            ("tests", instructions_tests),
            ("test_expansion", instructions_test_expansion),
        )
        if text
    }
    cli = {
        "effort": effort,
        "max_rules": max_rules,
        "tests_per_rule": tests_per_rule,
        "max_rules_per_test_generation": max_rules_per_test_generation,
        "split_rules": split_rules,
        "test_generations": test_generations,
        "test_expansions": test_expansions,
        "groundedness": groundedness,
        "validity": validity,
        "baseline_tests": baseline_tests,
        "drop_ungrounded": drop_ungrounded,
        "temperature": temperature,
        "instructions": instructions or None,
    }
    prepared = prepare(file, out, cli, fresh)
    print_warnings(prepared.ctx.prompt.warnings)
    for note in prepared.notes:
        print(f"promptgen: {note}", file=sys.stderr)
    if print_options:
        typer.echo(options_table(prepared))
    if dry_run:
        typer.echo(dry_run_table(prepared))
    if print_options or dry_run:
        return
    settings = load_settings(
        {
            "rules": rules_model,
            "eval": eval_model,
            "baseline": baseline_model,
            "api_base": api_base,
            "concurrency": concurrency,
            "cache": not no_cache,
        }
    )
    ctx, wall = execute(prepared, settings, quiet)
    typer.echo(summary(ctx, prepared.out, wall))
    if failed_stages(ctx, prepared.options):
        raise PromptgenError("some stages did not finish; re-run the same command to resume")
