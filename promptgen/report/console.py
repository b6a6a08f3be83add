"""What the main command prints: the run summary, `--print-options`, `--dry-run`."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from promptgen.config import RunConfig
from promptgen.context import Context
from promptgen.options import Options, flat
from promptgen.pipeline import critical_path, plan, unfinished
from promptgen.progress import NOTHING, usage_text
from promptgen.report.changes import EditChanges
from promptgen.report.changes_view import summary_lines
from promptgen.report.compiled import summary_line as compiled_line
from promptgen.report.coverage import behaviour_line, inputs_unchecked
from promptgen.report.coverage import summary_line as coverage_line
from promptgen.report.overview import overall_compliance
from promptgen.report.safety import skipped_line, summary_line
from promptgen.report.stats import check_names, is_failing, undecided
from promptgen.results import Test
from promptgen.secrets import shown as shown_value
from promptgen.words import counted


def dry_run_table(ctx: Context, cfg: RunConfig) -> str:
    calls = plan(ctx, cfg)
    if not any(calls.values()):
        return NOTHING
    lines = ["stage            calls"]
    lines += [f"{name:<16} {count:>5}" for name, count in calls.items()]
    lines.append(f"{'total':<16} {sum(calls.values()):>5}")
    lines.append(
        f"(at least; a repair turn or a retry adds calls; critical path "
        f"{critical_path(cfg)} rounds)"
    )
    return "\n".join(lines)


def resolved_options_table(options: Options, sources: dict[str, str]) -> str:
    rows = [f"{'option':<32} {'value':<14} from"]
    for name, value in flat(options, persisted_only=True).items():
        shown: object = value
        if value is None:
            shown = "all" if name.startswith("max_") else "-"
        elif isinstance(value, dict):  # call parameters: a key among them masked
            shown = shown_value(value)
        rows.append(f"{name:<32} {shown!s:<14} {sources.get(name, '')}")
    return "\n".join(rows)


def grounding(ctx: Context) -> str:
    """What the grounding check said of the rules: a count of ungrounded rules only
    where rules were checked ("0 ungrounded" of rules never checked would read as a pass)."""
    unchecked = sum(r.grounded is None for r in ctx.rules)
    if ctx.rules and unchecked == len(ctx.rules):
        return "grounding not checked"
    said = f"{sum(r.grounded is False for r in ctx.rules)} ungrounded"
    return f"{said}, {unchecked} not checked" if unchecked else said


def invalid_line(ctx: Context) -> str:
    """How many tests the validity check found invalid; "not checked" where it checked
    none ("invalid 0" of inputs never checked would read as a pass)."""
    if inputs_unchecked(ctx):
        return "invalid      not checked (--validity checks each input against the input spec)"
    return f"invalid      {sum(t.valid is False for t in ctx.tests)}"


def summary(
    ctx: Context, cfg: RunConfig, folder: Path, wall: float, changes: EditChanges | None = None
) -> str:
    """The end-of-run summary; a run of an edited prompt opens with what the edit did."""
    tests = ctx.tests
    by_origin = Counter(t.origin for t in tests)
    by_scenario = Counter(t.scenario or "(none)" for t in tests)
    lines = [
        f"prompt       {ctx.prompt.name}",
        f"intent       {ctx.intent or '(missing)'}",
        f"rules        {len(ctx.rules)} ({grounding(ctx)})",
        f"inverse      {len(ctx.inverse_rules)}",
        f"tests        {len(tests)}: "
        + ", ".join(f"{n} {o}" for o, n in sorted(by_origin.items())),
        "by scenario  " + ", ".join(f"{s}: {n}" for s, n in sorted(by_scenario.items())),
        invalid_line(ctx),
        *filter(
            None,
            [
                coverage_line(ctx),
                behaviour_line(ctx),
                summary_line(ctx),
                skipped_line(cfg),
                compiled_line(ctx),
            ],
        ),
        f"model use    {usage_text(ctx.usage.total)}",
        f"wall time    {wall:.1f} s",
        f"output       {folder}",
    ]
    if ctx.test_runs:
        lines.insert(-2, evaluation_line(ctx))
    reference = reference_line(tests)
    if reference:
        lines.insert(-2, reference)
    left = unfinished(ctx, cfg)
    if left:
        lines.append(f"unfinished   {', '.join(left)} (re-run the same command to finish them)")
    if changes is not None:
        lines = [*summary_lines(changes), "", *lines]
    return "\n".join(lines)


def reference_line(tests: list[Test]) -> str:
    """Which reference accuracy used: "reference    3 author-given, 7 from groundtruth
    model m, 1 invalid" ("" when no test has one)."""
    author = sum(t.groundtruth_status == "author" for t in tests)
    models = Counter(t.groundtruth_model or "?" for t in tests if t.groundtruth_status == "ok")
    invalid = sum(t.groundtruth_status == "invalid" for t in tests)
    parts = [f"{author} author-given"] if author else []
    parts += [f"{n} from groundtruth model {m}" for m, n in sorted(models.items())]
    if invalid:
        parts.append(f"{invalid} invalid (no accepted groundtruth)")
    return f"reference    {', '.join(parts)}" if parts else ""


def evaluation_line(ctx: Context) -> str:
    """Runs, compliance, the runs that fail as the reports count them (non-compliant, or a
    check failed: a label test answered with another label at 100 % compliance), and the
    runs whose call errored."""
    runs = ctx.test_runs
    checks = check_names(ctx)
    failing = sum(is_failing(r, checks) for r in runs)
    errored = sum(r.error is not None for r in runs)
    rate = overall_compliance(ctx)
    shown = "-" if rate is None else f"{rate:.1f}%"
    models = ", ".join(ctx.models_run)
    blank = undecided(ctx)
    metrics = len({i.metric for i in blank})
    tail = (
        f"; {len(blank)} undecided ({counted(metrics, 'metric')} could not decide)" if blank else ""
    )
    return (
        f"evaluation   {counted(len(runs), 'run')} on {models}: compliance {shown}, "
        f"{failing} failing "
        f"(non-compliant or a check failed), {errored} errored{tail}"
    )
