"""`promptgen pa run FILE --models M`: run a Promptarchitect prompt file's own tests.

Every sample of its `test_path` runs on every model, and every test of the file scores
every output (evaluation/promptarchitect.py). It is the main command with
`--samples-only` and without the compliance judge (a Promptarchitect file states no
rules to judge against), so nothing is generated and the analysis stages are skipped;
the same reports are written. `--fail-under` gates on the share of passed tests.
"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from promptgen import api
from promptgen.cli.run import execute, flag_parameter, options_from_flags
from promptgen.context import Context
from promptgen.errors import BadInputError
from promptgen.evaluation.promptarchitect import PREFIX, pa_tests
from promptgen.formats import load_prompt, read_text
from promptgen.formats.detect import candidates
from promptgen.gate import QualityGateError
from promptgen.model import PromptUnderTest
from promptgen.options import BY_NAME
from promptgen.progress import results_output

app = typer.Typer(
    name="pa",
    help="Promptarchitect prompt files: run their tests (docs/promptarchitect.md).",
    no_args_is_help=True,
)
FLAGS = ("models", "eval_models", "api_base", "out", "quiet", "junit", "fail_under",
         "fail_on_error", "runs_per_test", "cache", "dry_run", "fresh", "export",
         "allow_env")  # fmt: skip
HELP = {
    "models": 'Models under test: "a;b" or the flag repeated (needed here, or from '
    "PROMPTGEN_MODELS or the config file).",
    "eval_models": 'Judges of the question, score and metric tests: "a;b" (default: the '
    "eval model).",
    "out": "Output folder (default: ./promptgen-out/PROMPT-NAME-pa).",
    "fail_under": "Exit 1 when less than PCT % of the test verdicts passed. Accepted: 0-100.",
}
SUFFIX = "-pa"  # a main-command run of the same file keeps its own folder


def run(file: Path, **flags: Any) -> None:
    if flags.get("allow_env"):  # before the file is read: its ${env:} references
        options_from_flags({"allow_env": flags["allow_env"]})
    prompt = promptarchitect_prompt(file)
    given = {**flags, "samples_only": True, "compliance": False, "format": "promptarchitect"}
    if flags.get("out") is None:
        given["out"] = str(api.DEFAULT_OUT / f"{api.slug(prompt.name)}{SUFFIX}")
    options = options_from_flags(given)
    fail_under = options.run.fail_under
    options.run.fail_under = None  # gated below on the tests, not on compliance
    if not pa_tests(prompt):
        print(
            "promptgen: the file declares no tests: outputs are recorded, none is scored",
            file=sys.stderr,
        )
    ctx = execute(file, options, check=_needs_models)
    if ctx is None:
        return
    passed, total = pa_results(ctx)
    with results_output():
        shown = f" ({100.0 * passed / total:.1f}%)" if total else ""
        typer.echo(f"promptarchitect tests: {passed} of {total} verdicts passed{shown}")
    pa_gate(fail_under, passed, total)


def promptarchitect_prompt(file: Path) -> PromptUnderTest:
    """FILE read as a Promptarchitect prompt; any other file, or one without samples, is
    refused (exit code 2)."""
    if "promptarchitect" not in candidates(file, read_text(file)):
        raise BadInputError(
            "is not a Promptarchitect prompt file",
            file=file,
            hint="its frontmatter needs Promptarchitect keys (provider, test_path, tests, ...); "
            "run other prompts with `promptgen FILE`",
        )
    prompt = load_prompt(file, "promptarchitect")
    if not prompt.test_samples:
        raise BadInputError(
            "has no test samples to run",
            file=file,
            hint="set test_path: to a folder of sample files (.md, .markdown, .txt) beside it",
        )
    return prompt


def _needs_models(prepared: api.Prepared) -> None:
    if not prepared.cfg.models:
        raise BadInputError(
            "pa run needs models under test", hint="pass --models, e.g. --models openai/gpt-4o"
        )


def pa_results(ctx: Context) -> tuple[int, int]:
    """Passed and answered verdicts of the file's tests over every run (a run that failed
    gives none: its error counts under --fail-on-error)."""
    outcomes = [
        summary.outcome
        for run in ctx.test_runs
        for name, summary in run.metrics.items()
        if name.startswith(PREFIX) and summary.outcome in ("ok", "err")
    ]
    return outcomes.count("ok"), len(outcomes)


def pa_gate(fail_under: float | None, passed: int, total: int) -> None:
    if fail_under is None:
        return
    if not total:
        raise QualityGateError(
            f"--fail-under {fail_under:g}: no test verdicts to check",
            hint="give --models, and tests in the file's frontmatter",
        )
    rate = 100.0 * passed / total
    if rate < fail_under:
        raise QualityGateError(
            f"{rate:.1f}% of the Promptarchitect test verdicts passed, below "
            f"--fail-under {fail_under:g}%"
        )


def _parameter(name: str) -> inspect.Parameter:
    parameter = flag_parameter(BY_NAME[name])
    if name in HELP:
        info = parameter.annotation.__metadata__[0]
        info.help = HELP[name]
    return parameter


_FILE = inspect.Parameter(
    "file",
    inspect.Parameter.POSITIONAL_OR_KEYWORD,
    annotation=Annotated[
        Path,
        typer.Argument(help="A Promptarchitect prompt file with test_path.", show_default=False),
    ],
)
run.__signature__ = inspect.Signature([_FILE, *map(_parameter, FLAGS)])  # type: ignore[attr-defined]
run.__annotations__ = {p.name: p.annotation for p in run.__signature__.parameters.values()}  # type: ignore[attr-defined]
app.command(
    name="run",
    help="Run every sample of a Promptarchitect prompt file on every model and score it "
    "with every test of the file; writes context.json, overview.csv, report.md and "
    "report.html (and --junit). Exit codes as for the main command; --fail-under gates "
    "on the share of passed test verdicts.",
)(run)
