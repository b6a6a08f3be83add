"""report.md sections a reviewer acts on: failures grouped by rule, groundtruth answers,
rule groundedness and the invalid tests."""

from __future__ import annotations

from promptgen.context import Context
from promptgen.report.findings import (
    FailureGroup,
    failure_groups,
    groundedness,
    groundedness_summary,
    groundtruth_source,
    groundtruth_status,
    groundtruth_summary,
    groundtruth_tests,
    inputs_json,
    inputs_text,
    invalid_note,
    invalid_tests,
)
from promptgen.report.markdown_text import cell, fenced, table, text
from promptgen.report.stats import (
    Failure,
    excerpt,
    number,
    percent,
    reason_label,
    scenario_of,
    verdict,
)
from promptgen.words import counted

NO_RUNS = "No evaluation yet: this context has no test runs."


def failures_section(ctx: Context) -> str:
    """One part per rule with failing runs, worst first: counts per model, then a few
    failing examples."""
    if not ctx.test_runs:
        return NO_RUNS
    groups = failure_groups(ctx)
    if not groups:
        return "None."
    intro = (
        "Grouped by the rule the test targets, worst failure rate first. A run fails when "
        "it is non-compliant or fails a check; errored runs are counted under Errors."
    )
    return "\n\n".join([intro, *(_group(i, g) for i, g in enumerate(groups, start=1))])


def _group(index: int, group: FailureGroup) -> str:
    tag = " (inverse rule)" if group.inverse else ""
    rows = [
        [cell(model), str(group.failed[model]), str(runs), percent(_rate(group, model))]
        for model, runs in group.runs.items()
        if runs or group.failed[model]
    ]
    lines = [
        f"### {index}. {text(group.text)}{tag}",
        "",
        f"`{group.rule_id}`: **{group.total_failed} of {counted(group.total_runs, 'run')} failed** "
        f"({percent(group.rate)})",
        "",
        table(["Model", "Failed", "Runs", "Failure rate"], rows),
        "",
        f"Examples ({len(group.examples)} of {group.total_failed}):",
    ]
    lines += [_example(f) for f in group.examples]
    return "\n".join(lines)


def _rate(group: FailureGroup, model: str) -> float | None:
    runs = group.runs[model]
    return 100.0 * group.failed[model] / runs if runs else None


def _example(failure: Failure) -> str:
    run, test = failure.run, failure.test
    failed = (["compliance"] if verdict(run) is False else []) + failure.checks
    lines = [
        "",
        f"#### {text(run.test_id)} · {text(run.model)} · run {run.run_index}",
        "",
        f"- **Scenario:** {text(scenario_of(test))}",
        f"- **Failed:** {text(', '.join(failed))}",
        "",
        "**Input**",
        "",
        fenced(inputs_json(test.inputs if test else {}), "json"),
        "",
        "**Output**",
        "",
        fenced(run.output or ""),
    ]
    if failure.reasons:
        lines += ["", "**Reasons**", ""]
        lines += [f"- {text(reason_label(r))}: {text(r.reason or '-')}" for r in failure.reasons]
    return "\n".join(lines)


def groundtruth_section(ctx: Context) -> str:
    tests = groundtruth_tests(ctx)
    if not tests:
        return "No groundtruth: run with `--groundtruth-model`."
    rows = [
        [
            cell(t.id),
            cell(inputs_text(t.inputs)),
            groundtruth_status(t),
            cell(groundtruth_source(t)),
            number(t.groundtruth_score),
            cell(excerpt(t.groundtruth, 160) or "-"),
        ]
        for t in tests
    ]
    header = ["Test", "Input", "Status", "Model", "Score", "Answer"]
    return text(groundtruth_summary(ctx)) + ".\n\n" + table(header, rows)


def groundedness_section(ctx: Context) -> str:
    rows = groundedness(ctx)
    if not rows:
        return "_no rules_"
    if all(r.verdict == "not checked" for r in rows):
        return "Not checked: the groundedness stage did not run (`--groundedness`)."
    body = [[cell(r.rule.id), cell(r.rule.text), r.verdict, cell(r.reason or "-")] for r in rows]
    summary = text(groundedness_summary(rows)) + " (is each rule supported by the prompt?)."
    return summary + "\n\n" + table(["Rule", "Text", "Verdict", "Reason"], body)


def invalid_section(ctx: Context) -> str:
    tests = invalid_tests(ctx)
    if not tests:
        return "None."
    rows = []
    for test in tests:
        rule = ctx.rule(test.rule_id)
        rows.append(
            [
                cell(test.id),
                cell(rule.text if rule else test.rule_id or "-"),
                cell(scenario_of(test)),
                cell(inputs_text(test.inputs)),
                cell(test.validity_reason or "-"),
            ]
        )
    return (
        text(invalid_note(ctx))
        + "\n\n"
        + table(["Test", "Rule", "Scenario", "Input", "Why invalid"], rows)
    )
