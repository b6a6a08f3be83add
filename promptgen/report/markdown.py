"""`report.md`: the run as a Markdown page (summary, overview, failures by rule,
groundtruth, groundedness, rules, invalid tests, errors).

Everything taken from the context is untrusted text: outside code blocks it is escaped
(markdown_text.py) so it can neither break a table nor inject markup or links.
"""

from __future__ import annotations

from promptgen import words
from promptgen.context import Context
from promptgen.progress import usage_text
from promptgen.report.changes import EditChanges
from promptgen.report.changes_view import changes_markdown
from promptgen.report.compiled import compiled_markdown
from promptgen.report.findings import count_tests
from promptgen.report.markdown_sections import (
    NO_RUNS,
    failures_section,
    groundedness_section,
    groundtruth_section,
    invalid_section,
)
from promptgen.report.markdown_text import cell, fenced, table, text
from promptgen.report.mutation import mutation_markdown
from promptgen.report.overview import format_cell, overall_compliance, overview
from promptgen.report.safety import models_said, safety_markdown
from promptgen.report.stats import (
    FAULT_LABELS,
    check_names,
    error_kind,
    error_text,
    faulty,
    is_failing,
    percent,
    rule_rates,
    undecided_groups,
    verdict,
)

__all__ = ["cell", "fenced", "report_markdown", "table", "text"]


def report_markdown(ctx: Context, changes: EditChanges | None = None) -> str:
    """The page; an edited prompt's run opens with what the edit did (`changes`)."""
    sections = [
        f"# promptgen report: {text(ctx.prompt.name)}",
        text(ctx.prompt.description) if ctx.prompt.description else "",
        changes_markdown(changes, 2) if changes is not None else "",
        "## Summary\n\n" + _summary(ctx),
        safety_markdown(ctx),
        "## Overview\n\n" + _overview(ctx),
        "## Prompt\n\n" + _prompt(ctx),
        "## Intent\n\n" + (text(ctx.intent) if ctx.intent else "_not generated_"),
        "## Rules\n\n" + _rules(ctx),
        "## Failing outputs by rule\n\n" + failures_section(ctx),
        compiled_markdown(ctx),
        "## Groundtruth\n\n" + groundtruth_section(ctx),
        "## Rule groundedness\n\n" + groundedness_section(ctx),
        "## Invalid tests\n\n" + invalid_section(ctx),
        mutation_markdown(ctx, "##").rstrip(),
        "## Errors\n\n" + _errors(ctx),
        _undecided(ctx),
    ]
    return "\n\n".join(s for s in sections if s) + "\n"


def _summary(ctx: Context) -> str:
    runs = ctx.test_runs
    verdicts = [verdict(r) for r in runs]
    errors = sum(r.error is not None or r.fault is not None for r in runs)
    usage = ctx.usage.total
    lines = [
        f"**{count_tests(ctx).headline()}**",
        "",
        f"- **Models:** {text(models_said(ctx))}",
        f"- **Runs:** {len(runs)}, {errors} errored{_faults(ctx)}{_cut_off(ctx)}",
        f"- **Overall compliance:** {percent(overall_compliance(ctx))} "
        f"({verdicts.count(True)} compliant, {verdicts.count(False)} non-compliant, "
        f"{verdicts.count(None)} without a verdict)",
        _failing(ctx),
        f"- **Usage:** {usage_text(usage)}",
    ]
    fallbacks = ctx.batch_fallbacks
    if fallbacks:
        lines.append(
            f"- **--batch:** {len(fallbacks)} model(s) called one by one, at the normal price "
            "(not the batch rate):"
        )
        lines += [f"  - {text(note)}" for note in fallbacks]
    if ctx.schema_refusals:  # a server refused a schema: asked another way, or stopped
        lines.append(f"- **Schemas refused:** {len(ctx.schema_refusals)}")
        lines += [f"  - {text(r.said())}" for r in ctx.schema_refusals]
    if not runs:
        lines.append(f"\n> {NO_RUNS}")
    return "\n".join(lines)


def _failing(ctx: Context) -> str:
    """The runs that fail, beside the judge's rate: a label answered wrong at 100 %
    compliance is a failing run (the deterministic check wins over a lenient judge)."""
    runs, checks = ctx.test_runs, check_names(ctx)
    failing = sum(is_failing(r, checks) for r in runs)
    return (
        f"- **Failing runs:** {failing} of {len(runs)} (non-compliant, or a check failed: "
        "see Failing outputs by rule)"
    )


def _cut_off(ctx: Context) -> str:
    """How many answers stopped at the token limit (judged as they came back)."""
    count = sum(r.cut_off for r in ctx.test_runs)
    if not count:
        return ""
    return (
        f"; {words.counted(count, 'answer')} cut off at the token limit, judged as they came back"
    )


def _faults(ctx: Context) -> str:
    """How many errored runs were faulty outputs (not judged: in no rate)."""
    count = faulty(ctx.test_runs)
    if not count:
        return ""
    kinds = ", ".join(
        f"{sum(r.fault == kind for r in ctx.test_runs)} {label}"
        for kind, label in FAULT_LABELS.items()
        if any(r.fault == kind for r in ctx.test_runs)
    )
    return f", of which {count} faulty outputs, not judged ({kinds})"


def _overview(ctx: Context) -> str:
    df = overview(ctx)
    if df.empty:
        return NO_RUNS
    rows = (
        [cell(format_cell(c, v)) for c, v in zip(df.columns, record, strict=True)]
        for record in df.itertuples(index=False)
    )
    return "Rates and scores in %.\n\n" + table([cell(c) for c in df.columns], rows)


def _prompt(ctx: Context) -> str:
    body = "\n\n".join(f"[{m.role}]\n{m.content}" for m in ctx.prompt.messages)
    source = f"From `{text(ctx.prompt.source)}`.\n\n" if ctx.prompt.source else ""
    return source + fenced(body or "(no messages)")


def _rules(ctx: Context) -> str:
    models = ctx.models_run
    header = ["Rule", "Text", *(f"{cell(m)} pass rate (runs)" for m in models)]
    rates = rule_rates(ctx)
    parts = []
    for title, inverse in (("Rules", False), ("Inverse rules", True)):
        rows = [
            [cell(r.rule_id), cell(r.text)]
            + [f"{percent(r.rates[m])} ({r.runs[m]})" for m in models]
            for r in rates
            if r.inverse is inverse
        ]
        if rows:
            parts.append(f"### {title}\n\n" + table(header, rows))
    if not parts:
        return "_no rules_"
    return "Pass rate: compliance rate of the runs whose test targets the rule.\n\n" + "\n\n".join(
        parts
    )


def _errors(ctx: Context) -> str:
    rows = [
        [cell(r.test_id), cell(r.model), str(r.run_index), error_kind(r), cell(error_text(r))]
        for r in ctx.test_runs
        if r.error is not None or r.fault is not None
    ]
    header = ["Test", "Model", "Run", "Kind", "Error"]
    return table(header, rows) if rows else "None."


UNDECIDED_NOTE = (
    "A metric or check that could not decide on a run gives it no verdict: the run is in "
    "no rate or average of that metric."
)


def _undecided(ctx: Context) -> str:
    """Every (run, metric) that could not decide, with its reason: a line per reason, then
    the runs (the reason written once per group); empty when every metric decided."""
    groups = undecided_groups(ctx)
    if not groups:
        return ""
    lines = [f"- {text(g.line())}" for g in groups]
    rows = [
        [
            cell(i.run.test_id),
            cell(i.run.model),
            str(i.run.run_index),
            cell(i.metric),
            cell(i.reason) if n == 0 else "as above",
        ]
        for g in groups
        for n, i in enumerate(g.items)
    ]
    body = table(["Test", "Model", "Run", "Metric", "Reason"], rows)
    return "## Undecided\n\n" + UNDECIDED_NOTE + "\n\n" + "\n".join(lines) + "\n\n" + body
