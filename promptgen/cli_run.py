"""The main command: `promptgen FILE [options]` generates tests for a prompt (or resumes)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from promptgen.gate import gate
from promptgen.llm import load_settings
from promptgen.llm.config import split_models
from promptgen.options import effort_table, parse_params
from promptgen.progress import print_warnings
from promptgen.report.junit import junit_xml
from promptgen.report.overview import overview, print_overview
from promptgen.run import (
    check_evaluation,
    dry_run_table,
    execute,
    options_table,
    prepare,
    summary,
    use_configured_models,
)

GEN = "Generation"
EVAL = "Evaluation"
GATE = "CI gate"
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
    keep_invalid: Annotated[bool | None, opt("Also run tests judged invalid.", GEN)] = None,
    tests: Annotated[
        Path | None,
        opt("Evaluate the tests in this file (tests.json, tests.filtered.json).", GEN, "--tests"),
    ] = None,
    rate_tests: Annotated[
        bool | None, opt("Review the test collection (test_review.md).", GEN)
    ] = None,
    filter_tests: Annotated[
        int | None,
        opt("Save the N most important tests as tests.filtered.json.", GEN),
    ] = None,
    models: Annotated[
        list[str] | None,
        opt('Models under test: "a;b" or the flag repeated. Evaluates after generating.', EVAL),
    ] = None,
    evals: Annotated[
        bool | None, opt("Evaluate when models are given; --no-evals generates only.", EVAL)
    ] = None,
    runs_per_test: Annotated[int | None, opt(panel=EVAL)] = None,
    max_tests_to_run: Annotated[int | None, opt(panel=EVAL)] = None,
    eval_models: Annotated[
        list[str] | None, opt('Judges for every metric: "a;b" (default: the eval model).', EVAL)
    ] = None,
    compliance: Annotated[
        bool | None, opt("Judge every output against the prompt's rules (default: on).", EVAL)
    ] = None,
    metric: Annotated[
        list[Path] | None,
        opt("A *.metric.prompty file (repeatable); those beside the prompt are found.", EVAL),
    ] = None,
    custom_metric: Annotated[
        list[str] | None, opt("An inline judge prompt answering OK or ERR (repeatable).", EVAL)
    ] = None,
    check: Annotated[
        list[str] | None,
        opt('A deterministic check NAME=VALUE, e.g. "icontains=thanks" (repeatable).', EVAL),
    ] = None,
    param: Annotated[
        list[str] | None,
        opt("A call parameter KEY=VALUE for the models under test (repeatable).", EVAL),
    ] = None,
    groundtruth: Annotated[
        bool | None, opt("Have a groundtruth model answer every test.", EVAL)
    ] = None,
    groundtruth_model: Annotated[
        str | None, opt("Groundtruth model (implies --groundtruth).", EVAL)
    ] = None,
    groundtruth_eval_models: Annotated[
        list[str] | None, opt('Judges of groundtruth answers: "a;b" [--eval-models].', EVAL)
    ] = None,
    groundtruth_threshold: Annotated[
        float | None, opt("Score (0-100) a groundtruth answer needs [80].", EVAL)
    ] = None,
    groundtruth_retries: Annotated[
        int | None, opt("Fresh answers asked below the threshold [2].", EVAL)
    ] = None,
    fail_under: Annotated[
        float | None,
        opt("Exit 1 when overall compliance (%) is below PCT.", GATE, "--fail-under"),
    ] = None,
    fail_on_error: Annotated[
        float | None,
        opt("Exit 3 when more than RATE (0-1) of evaluation calls failed [0].", GATE),
    ] = None,
    junit: Annotated[
        Path | None, opt("Write JUnit XML (a testcase per test x model).", GATE, "--junit")
    ] = None,
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
    """Generate tests for FILE and evaluate them (the default command: `promptgen FILE`).

    Extracts the intent, input specification, output rules and inverse rules, checks
    groundedness, generates, expands and validates tests; with --models, runs them on
    the models under test and scores the outputs. Writes context.json, readable files
    and reports. Re-running the same command resumes an interrupted run; FILE may be a
    saved context.json, e.g. to evaluate its tests on other models.

    Exit codes: 0 ok, 1 quality gate failed (--fail-under), 2 bad input,
    3 provider or runtime failure (unfinished stages, or failed calls above --fail-on-error).
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
        "keep_invalid": keep_invalid,
        "rate_tests": rate_tests,
        "filter_tests": filter_tests,
        "models": split_models(models) or None,
        "evals": True if models and evals is None else evals,
        "runs_per_test": runs_per_test,
        "max_tests_to_run": max_tests_to_run,
        "eval_models": split_models(eval_models) or None,
        "compliance": compliance,
        "metric_files": [str(p) for p in metric] if metric else None,
        "custom_metrics": custom_metric or None,
        "checks": check or None,
        "model_params": parse_params(param) if param else None,
        "groundtruth": True if groundtruth_model and groundtruth is None else groundtruth,
        "groundtruth_model": groundtruth_model,
        "groundtruth_eval_models": split_models(groundtruth_eval_models) or None,
        "groundtruth_threshold": groundtruth_threshold,
        "groundtruth_retries": groundtruth_retries,
    }
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
    prepared = prepare(file, out, cli, fresh, tests_file=tests)
    use_configured_models(prepared, settings)
    check_evaluation(prepared)
    print_warnings(prepared.ctx.prompt.warnings)
    for note in prepared.notes:
        print(f"promptgen: {note}", file=sys.stderr)
    if print_options:
        typer.echo(options_table(prepared))
    if dry_run:
        typer.echo(dry_run_table(prepared))
    if print_options or dry_run:
        return
    ctx, wall = execute(prepared, settings, quiet)
    typer.echo(summary(ctx, prepared.out, wall))
    if ctx.test_runs:  # a result, like the summary: printed even with --quiet
        print_overview(overview(ctx))
    if junit is not None:
        junit.parent.mkdir(parents=True, exist_ok=True)
        junit.write_text(junit_xml(ctx), encoding="utf-8")
    gate(ctx, prepared.options, fail_under=fail_under, fail_on_error=fail_on_error)
