"""report.html sections a reviewer acts on: failures grouped by rule (examples folded in
<details>), groundtruth answers, rule groundedness and the invalid tests.

Every value from the context goes through `html.escape`, attributes included.
"""

from __future__ import annotations

from html import escape

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

TITLE_LIMIT = 4000
_GROUNDTRUTH_CSS = {"ok": "good", "invalid": "bad", "author": "author"}
_GROUNDED_CSS = {"grounded": "good", "not grounded": "bad", "check failed": "bad"}


def _table(table_id: str, head: list[str], rows: list[str], numeric: tuple[str, ...] = ()) -> str:
    """A sortable table (report.js) from rows of escaped cells."""
    cells = "".join(
        f'<th scope="col" data-type="{"num" if h in numeric else "text"}">{escape(h)}</th>'
        for h in head
    )
    return (
        f'<table id="{table_id}" class="sortable"><thead><tr>{cells}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def failures_section(ctx: Context) -> str:
    groups = failure_groups(ctx)
    if not groups:
        return '<p class="good-news">No failing outputs.</p>'
    intro = (
        '<p class="hint">Grouped by the rule the test targets, worst failure rate first. '
        "A run fails when it is non-compliant or fails a check; errored runs are under "
        "Errors. Open a group to see failing examples.</p>"
    )
    return intro + "\n".join(_group(g) for g in groups)


def _group(group: FailureGroup) -> str:
    tag = ' <span class="tag">inverse</span>' if group.inverse else ""
    rows = "".join(
        f"<tr><td>{escape(model)}</td><td>{group.failed[model]}</td><td>{runs}</td>"
        f"<td>{percent(100.0 * group.failed[model] / runs if runs else None)}</td></tr>"
        for model, runs in group.runs.items()
        if runs or group.failed[model]
    )
    counts = (
        '<table class="group-counts"><thead><tr><th>Model</th><th>Failed</th><th>Runs</th>'
        f"<th>Failure rate</th></tr></thead><tbody>{rows}</tbody></table>"
    )
    examples = "".join(_example(f) for f in group.examples)
    return (
        f'<article class="failure-group" data-rule="{escape(group.rule_id)}" '
        f'data-failed="{group.total_failed}" data-runs="{group.total_runs}">'
        f"<h3>{escape(group.text)}{tag} <code>{escape(group.rule_id)}</code></h3>"
        f'<p class="group-total"><span class="tag bad">{group.total_failed} of '
        f"{counted(group.total_runs, 'run')} failed ({percent(group.rate)})</span></p>{counts}"
        f"<details><summary>Failing examples ({len(group.examples)} of "
        f"{group.total_failed})</summary>{examples}</details></article>"
    )


def _example(failure: Failure) -> str:
    run, test = failure.run, failure.test
    failed = (["compliance"] if verdict(run) is False else []) + failure.checks
    reasons = "".join(
        f"<li><b>{escape(reason_label(r))}</b>: {escape(r.reason or '-')}</li>"
        for r in failure.reasons
    )
    inputs = inputs_json(test.inputs if test else {})
    return (
        f'<div class="failure"><h4><code>{escape(run.test_id)}</code> · '
        f"{escape(run.model)} · run {run.run_index} · {escape(scenario_of(test))}"
        f' <span class="tag bad">{escape(", ".join(failed))}</span></h4>'
        '<div class="pair"><div><h5>Input</h5>'
        f'<pre class="inputs">{escape(inputs)}</pre>'
        f'<h5>Output</h5><pre class="output">{escape(run.output or "")}</pre></div>'
        f"<div><h5>Why it failed</h5>"
        f"<ul>{reasons or '<li>no reason recorded</li>'}</ul></div></div></div>"
    )


def groundtruth_section(ctx: Context) -> str:
    tests = groundtruth_tests(ctx)
    if not tests:
        return "<p>No groundtruth: run with <code>--groundtruth-model</code>.</p>"
    rows = []
    for t in tests:
        status = t.groundtruth_status or ""
        answer = t.groundtruth or ""
        rows.append(
            f'<tr data-status="{escape(status)}"><td class="id">{escape(t.id)}</td>'
            f'<td title="{escape(inputs_json(t.inputs, TITLE_LIMIT))}">'
            f"{escape(inputs_text(t.inputs))}</td>"
            f'<td class="{_GROUNDTRUTH_CSS.get(status, "")}">'
            f"{escape(groundtruth_status(t))}</td>"
            f"<td>{escape(groundtruth_source(t))}</td>"
            f'<td data-v="{"" if t.groundtruth_score is None else t.groundtruth_score}">'
            f"{number(t.groundtruth_score)}</td>"
            f'<td class="output" title="{escape(answer[:TITLE_LIMIT])}">'
            f"{escape(excerpt(answer, 160) or '-')}</td></tr>"
        )
    head = ["Test", "Input", "Status", "Model", "Score", "Answer"]
    summary = f"<p>{escape(groundtruth_summary(ctx))}.</p>"
    return summary + _table("groundtruth-table", head, rows, numeric=("Score",))


def groundedness_section(ctx: Context) -> str:
    found = groundedness(ctx)
    if not found:
        return "<p>No rules.</p>"
    if all(r.verdict == "not checked" for r in found):
        return "<p>Not checked: the groundedness stage did not run (--groundedness).</p>"
    rows = [
        f'<tr data-verdict="{escape(r.verdict)}"><th scope="row"><code>{escape(r.rule.id)}'
        f'</code></th><td class="rule-text">{escape(r.rule.text)}</td>'
        f'<td class="{_GROUNDED_CSS.get(r.verdict, "none")}">{escape(r.verdict)}</td>'
        f"<td>{escape(r.reason or '-')}</td></tr>"
        for r in found
    ]
    summary = escape(groundedness_summary(found))
    head = ["Rule", "Text", "Verdict", "Reason"]
    return f"<p>{summary} (is each rule supported by the prompt?).</p>" + _table(
        "groundedness-table", head, rows
    )


def invalid_section(ctx: Context) -> str:
    tests = invalid_tests(ctx)
    if not tests:
        return "<p>None.</p>"
    rows = []
    for test in tests:
        rule = ctx.rule(test.rule_id)
        rows.append(
            f'<tr><td class="id">{escape(test.id)}</td>'
            f"<td>{escape(rule.text if rule else test.rule_id or '-')}</td>"
            f"<td>{escape(scenario_of(test))}</td>"
            f'<td title="{escape(inputs_json(test.inputs, TITLE_LIMIT))}">'
            f"{escape(inputs_text(test.inputs))}</td>"
            f"<td>{escape(test.validity_reason or '-')}</td></tr>"
        )
    note = f'<p class="hint">{escape(invalid_note(ctx))} They are not in the tests table.</p>'
    head = ["Test", "Rule", "Scenario", "Input", "Why invalid"]
    return note + _table("invalid-table", head, rows)
