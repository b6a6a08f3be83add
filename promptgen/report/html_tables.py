"""The HTML report's tables: every run, and every test.

Cells carry their sort value in `data-v` so report.js sorts numbers as numbers.
"""

from __future__ import annotations

import json
from html import escape

from promptgen.context import Context
from promptgen.report.findings import inputs_json, inputs_text, shown_tests
from promptgen.report.stats import (
    FAULT_LABELS,
    check_names,
    error_text,
    excerpt,
    is_failing,
    metric_names,
    number,
    scenario_of,
    verdict,
)
from promptgen.results import MetricSummary, TestRun

OUTPUT_TITLE_LIMIT = 4000


def _th(label: str, numeric: bool = False) -> str:
    kind = "num" if numeric else "text"
    return f'<th scope="col" data-type="{kind}">{escape(label)}</th>'


def _td(shown: str, value: object = None, css: str = "", title: str | None = None) -> str:
    """A cell from raw text: everything is escaped here."""
    attrs = f' class="{css}"' if css else ""
    if value is not None:
        attrs += f' data-v="{escape(str(value))}"'
    if title:
        attrs += f' title="{escape(title)}"'
    return f"<td{attrs}>{escape(shown)}</td>"


def _compliance_cell(run: TestRun) -> str:
    if run.fault is not None:  # an empty or cut-off reply: not judged
        return _td(run.fault, "", "bad", error_text(run) or FAULT_LABELS[run.fault])
    if run.error is not None:
        return _td("error", "", "bad", error_text(run))
    found = verdict(run)
    if found is None:
        return _td("n/a", "", "none")
    score = run.metrics["compliance"].score
    return _td("ok" if found else "fail", score if score is not None else "", _css(found))


def _metric_cell(summary: MetricSummary | None) -> str:
    if summary is None or summary.score is None:
        return _td("-", "", "none")
    css = {"ok": "good", "err": "bad"}.get(summary.outcome, "")
    return _td(number(summary.score), f"{summary.score:.2f}", css)


def _css(ok: bool) -> str:
    return "good" if ok else "bad"


def results_table(ctx: Context) -> str:
    metrics = metric_names(ctx)
    checks = check_names(ctx)
    head = (
        _th("Test")
        + _th("Scenario")
        + _th("Rule")
        + _th("Input")
        + _th("Model")
        + _th("Run", True)
        + _th("Compliance", True)
        + "".join(_th(m, True) for m in metrics)
        + _th("Latency ms", True)
        + _th("Output")
    )
    rows = []
    for run in ctx.test_runs:
        test = ctx.test(run.test_id)
        rule = ctx.rule(test.rule_id) if test else None
        failing = "1" if is_failing(run, checks) else "0"
        output = _output(run)
        latency = "" if run.latency_ms is None else f"{run.latency_ms:.0f}"
        cells = [
            _td(run.test_id, css="id"),
            _td(scenario_of(test), css="nowrap"),
            _td(excerpt(rule.text, 60) if rule else "-", title=rule.text if rule else None),
            _inputs_cell(test.inputs if test else {}),
            _td(run.model, css="nowrap"),
            _td(str(run.run_index), run.run_index),
            _compliance_cell(run),
            *(_metric_cell(run.metrics.get(m)) for m in metrics),
            _td(latency, latency),
            _td(excerpt(output, 140), css="output", title=output[:OUTPUT_TITLE_LIMIT]),
        ]
        rows.append(f'<tr data-failing="{failing}">{"".join(cells)}</tr>')
    return (
        f'<table id="results-table" class="sortable"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _inputs_cell(inputs: dict[str, object]) -> str:
    """The test's inputs shortened; the whole JSON on hover."""
    return _td(inputs_text(inputs), css="inputs", title=inputs_json(inputs, OUTPUT_TITLE_LIMIT))


def _output(run: TestRun) -> str:
    if run.fault is not None:
        return f"({FAULT_LABELS[run.fault]}) {run.output or ''}".rstrip()
    if run.cut_off and run.output is not None:
        return f"{run.output} (cut off at the token limit)"
    return run.output if run.output is not None else f"(no output) {error_text(run)}"


def tests_table(ctx: Context) -> str:
    head = "".join(
        _th(label, label == "Score")
        for label in ("Test", "Scenario", "Rule", "Valid", "Inputs", "Expected", "Score")
    )
    rows = []
    for test in shown_tests(ctx):  # the invalid ones have their own section
        rule = ctx.rule(test.rule_id)
        rule_text = (rule.text if rule else test.rule_id) or "-"
        if test.inverse:
            rule_text = f"[inverse] {rule_text}"
        valid = {True: "yes", False: "no", None: "-"}[test.valid]
        inputs = json.dumps(test.inputs, indent=1, ensure_ascii=False, default=str)
        expected = test.expected_output or test.groundtruth or ""
        score = test.groundtruth_score
        cells = [
            _td(test.id, css="id"),
            _td(scenario_of(test)),
            _td(rule_text),
            _td(valid, css={True: "good", False: "bad", None: ""}[test.valid]),
            f'<td><pre class="inputs">{escape(inputs)}</pre></td>',
            _td(excerpt(expected, 200), title=expected[:OUTPUT_TITLE_LIMIT] or None),
            _td(number(score), "" if score is None else score),
        ]
        rows.append(f"<tr>{''.join(cells)}</tr>")
    return (
        f'<table id="tests-table" class="sortable"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )
