"""`report.md`: the run as a Markdown page (summary, overview, rules, failures, errors).

Everything taken from the context is untrusted text: outside code blocks it is escaped
so it can neither break a table nor inject markup or links into the rendered page.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence

from promptgen.context import Context
from promptgen.report.overview import format_cell, overall_compliance, overview
from promptgen.report.safety import safety_markdown
from promptgen.report.stats import (
    FAULT_LABELS,
    Failure,
    error_kind,
    error_text,
    failures,
    faulty,
    percent,
    reason_label,
    rule_rates,
    scenario_of,
    verdict,
)

_SPECIAL = re.compile(r"([\\`*_\[\]|#])")
NO_RUNS = "No evaluation yet: this context has no test runs."


def text(value: object) -> str:
    """Untrusted text for a Markdown paragraph or list item, on one line."""
    escaped = str(value).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return " ".join(_SPECIAL.sub(r"\\\1", escaped).split())


def cell(value: object) -> str:
    """Untrusted text for a table cell: escaped, line breaks kept as <br>."""
    return "<br>".join(text(line) for line in str(value).splitlines()) or " "


def fenced(body: str, lang: str = "text") -> str:
    """A code block whose fence is longer than any backtick run inside it."""
    longest = max((len(m) for m in re.findall(r"`+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{lang}\n{body.rstrip()}\n{fence}"


def table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A table from already escaped cells."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def report_markdown(ctx: Context) -> str:
    sections = [
        f"# promptgen report: {text(ctx.prompt.name)}",
        text(ctx.prompt.description) if ctx.prompt.description else "",
        "## Summary\n\n" + _summary(ctx),
        safety_markdown(ctx),
        "## Overview\n\n" + _overview(ctx),
        "## Prompt\n\n" + _prompt(ctx),
        "## Intent\n\n" + (text(ctx.intent) if ctx.intent else "_not generated_"),
        "## Rules\n\n" + _rules(ctx),
        "## Failing tests\n\n" + _failures(ctx),
        "## Errors\n\n" + _errors(ctx),
    ]
    return "\n\n".join(s for s in sections if s) + "\n"


def _summary(ctx: Context) -> str:
    runs = ctx.test_runs
    verdicts = [verdict(r) for r in runs]
    errors = sum(r.error is not None or r.fault is not None for r in runs)
    usage = ctx.usage.total
    lines = [
        f"- **Models:** {text(', '.join(ctx.models_run)) or 'none'}",
        f"- **Tests:** {len(ctx.tests)} ({len({r.test_id for r in runs})} with runs)",
        f"- **Runs:** {len(runs)}, {errors} errored{_faults(ctx)}",
        f"- **Overall compliance:** {percent(overall_compliance(ctx))} "
        f"({verdicts.count(True)} compliant, {verdicts.count(False)} non-compliant, "
        f"{verdicts.count(None)} without a verdict)",
        f"- **Usage:** {usage.total_tokens} tokens, ${usage.cost:.4f}, {usage.calls} calls",
    ]
    if not runs:
        lines.append(f"\n> {NO_RUNS}")
    return "\n".join(lines)


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


def _failures(ctx: Context) -> str:
    found = failures(ctx)
    if not ctx.test_runs:
        return NO_RUNS
    return "\n\n".join(map(_failure, found)) if found else "None."


def _failure(failure: Failure) -> str:
    run, test = failure.run, failure.test
    failed = (["compliance"] if verdict(run) is False else []) + failure.checks
    rule = f"{text(failure.rule.text)} ({text(failure.rule.id)})" if failure.rule else "none"
    lines = [
        f"### {text(run.test_id)} · {text(run.model)} · run {run.run_index}",
        "",
        f"- **Rule:** {rule}",
        f"- **Scenario:** {text(scenario_of(test))}",
        f"- **Failed:** {text(', '.join(failed))}",
        "",
        "**Input**",
        "",
        fenced(
            json.dumps(test.inputs if test else {}, indent=2, ensure_ascii=False, default=str),
            "json",
        ),
        "",
        "**Output**",
        "",
        fenced(run.output or ""),
    ]
    if failure.reasons:
        lines += ["", "**Reasons**", ""]
        lines += [f"- {text(reason_label(r))}: {text(r.reason or '-')}" for r in failure.reasons]
    return "\n".join(lines)


def _errors(ctx: Context) -> str:
    rows = [
        [cell(r.test_id), cell(r.model), str(r.run_index), error_kind(r), cell(error_text(r))]
        for r in ctx.test_runs
        if r.error is not None or r.fault is not None
    ]
    header = ["Test", "Model", "Run", "Kind", "Error"]
    return table(header, rows) if rows else "None."
