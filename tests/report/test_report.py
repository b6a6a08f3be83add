"""Reports from a saved run: the overview figures, Markdown, HTML, JUnit and the files.

The figures are checked against hand-computed values for tests/report_data.py.
"""

from __future__ import annotations

import base64
import hashlib
import math
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pandas as pd
import pytest
from rich.console import Console

from promptgen import secrets
from promptgen.context import Context
from promptgen.report.files import write_reports
from promptgen.report.html import asset, report_html
from promptgen.report.junit import junit_xml
from promptgen.report.markdown import cell, fenced, report_markdown
from promptgen.report.overview import (
    ALL_SCENARIOS,
    error_rate,
    overall_compliance,
    overview,
    print_overview,
)
from promptgen.results import MetricInfo, MetricSummary, TestRun
from tests.report_data import CHECK, MODEL_A, MODEL_B, XSS, empty_context, report_context

NAN = math.nan
COLUMNS = [
    "model",
    "scenario",
    "tests",
    "runs",
    "errors",
    "faulty",
    "undecided",
    "compliance",
    "rule_compliance",
    "inverse_compliance",
    "valid_compliance",
    "accuracy",
    CHECK,
    "cost",
    "tokens",
    "latency_p50_ms",
    "latency_p95_ms",
]
T = 200 / 3  # two of three
# (model, scenario) -> every column after those two, computed by hand from report_data.
# fmt: off
EXPECTED = {
    (MODEL_A, ALL_SCENARIOS): [4, 5, 1, 0, 0, 50, T, 0, T, 57.5, 50, 0.005, 65, 250, 385],
    (MODEL_A, "formal"): [2, 3, 0, 0, 0, T, T, NAN, T, 190 / 3, T, 0.004, 50, 200, 290],
    (MODEL_A, "casual"): [1, 1, 0, 0, 0, 0, NAN, 0, NAN, 40, 0, 0.001, 15, 400, 400],
    (MODEL_A, "(none)"): [1, 1, 1, 0, 0, NAN, NAN, NAN, NAN, NAN, NAN, 0, 0, NAN, NAN],
    (MODEL_B, ALL_SCENARIOS): [5, 6, 0, 0, 0, 75, T, 100, T, 74, 80, 0.012, 180, 300, 525],
    (MODEL_B, "formal"): [2, 2, 0, 0, 0, 50, 50, NAN, 50, 85, 100, 0.006, 60, 200, 245],
    (MODEL_B, "casual"): [2, 2, 0, 0, 0, 100, NAN, 100, NAN, 75, 100, 0.003, 60, 450, 540],
    (MODEL_B, "(none)"): [1, 2, 0, 0, 0, 100, 100, NAN, 100, 50, 0, 0.003, 60, 250, 430],
}
# fmt: on


def test_overview_matches_hand_computed_figures() -> None:
    df = overview(report_context())
    assert list(df.columns) == COLUMNS
    assert list(zip(df["model"], df["scenario"], strict=True)) == list(EXPECTED)
    for record in df.itertuples(index=False):
        expected = EXPECTED[(record[0], record[1])]
        assert list(record[2:]) == pytest.approx(expected, nan_ok=True), record[:2]
    assert df["tests"].dtype == "int64" and df["tokens"].dtype == "int64"


def test_overall_compliance_and_error_rate() -> None:
    ctx = report_context()
    assert overall_compliance(ctx) == pytest.approx(62.5)  # 5 compliant, 3 not
    assert error_rate(ctx) == pytest.approx(100 / 11)
    empty = empty_context()
    assert overall_compliance(empty) is None
    assert error_rate(empty) == 0.0


def test_overview_of_an_empty_context_has_the_columns() -> None:
    ctx = empty_context()
    ctx.metrics = [MetricInfo(name="tone", kind="custom", scorer=True)]
    df = overview(ctx)
    assert df.empty
    assert list(df.columns) == [*COLUMNS[:11], "tone", *COLUMNS[13:]]


def test_a_metric_named_like_a_column_gets_a_prefix() -> None:
    ctx = report_context()
    ctx.metrics.append(MetricInfo(name="cost", kind="custom", scorer=True))
    assert "metric:cost" in overview(ctx).columns


def test_print_overview_shows_names_literally() -> None:
    ctx = report_context()
    for run in ctx.test_runs:
        run.model = "[bold]m[/bold]" if run.model == MODEL_A else run.model
    console = Console(record=True, width=100)
    print_overview(overview(ctx), console)
    shown = console.export_text()
    assert "[bold]m[/bold]" in shown
    assert "66.7" in shown and "0.0050" in shown and " - " in shown
    assert "p95 ms" in shown  # columns that do not fit go into a further table
    empty = Console(record=True)
    print_overview(overview(empty_context()), empty)
    assert "no evaluation yet" in empty.export_text()


def test_markdown_sections_and_figures() -> None:
    md = report_markdown(report_context())
    headings = re.findall(r"^## (.+)$", md, re.M)
    assert headings == [
        "Summary", "Overview", "Prompt", "Intent", "Rules", "Failing outputs by rule",
        "Groundtruth", "Rule groundedness", "Invalid tests", "Errors",
    ]  # fmt: skip
    assert "- **Overall compliance:** 62.5% (5 compliant, 3 non-compliant" in md
    assert "- **Failing runs:** 4 of 11 (non-compliant, or a check failed: see Failing" in md
    assert "- **Usage:** 11 calls, 245 tokens, $0.0170" in md  # as the terminal says it
    assert "| rule-start | The output starts with Hello | 50.0% (2) | 100.0% (2) |" in md
    assert "| rule-short | The output is one sentence \\| no more | 100.0% (2) | 50.0% (3) |" in md
    assert "| inv-start | The output does not start with Hello | 0.0% (1) | 100.0% (1) |" in md
    assert "| model-a | (all) | 4 | 5 | 1 | 0 | 0 | 50.0 | 66.7 | 0.0 |" in md
    assert "You greet the user. Always start with Hello." in md
    assert "| t4 | model-a | 0 | call failed | timeout after 30 s |" in md
    assert "- **Runs:** 11, 1 errored\n" in md


def test_markdown_failing_tests_show_input_output_and_reason() -> None:
    md = report_markdown(report_context())
    failing = re.findall(r"^#### (t\d) · (model-\w) · run (\d)$", md, re.M)
    assert sorted(failing) == [
        ("t1", MODEL_A, "1"),
        ("t2", MODEL_B, "0"),
        ("t3", MODEL_A, "0"),
        ("t4", MODEL_B, "0"),
    ]
    assert f"```text\n{XSS}\n```" in md  # outputs are verbatim inside a code block
    assert "- judge-x: Does not start with Hello; &lt;script&gt; found" in md
    assert "- judge-y: Answer is HTML \\| not a greeting" in md
    assert "- contains=Hello: 'Hello' not found" in md
    assert "- judge-x: Two sentences not one" in md
    assert "- **Failed:** contains=Hello" in md  # a failed check alone is a failure
    assert "<script>" not in md.replace(f"```text\n{XSS}\n```", "")


def test_markdown_escaping_helpers() -> None:
    assert cell("a | b\nc <i>") == "a \\| b<br>c &lt;i&gt;"
    assert cell("[x](javascript:alert(1))") == "\\[x\\](javascript:alert(1))"
    assert fenced("a ``` b").startswith("````text\n")


def test_markdown_of_an_empty_context() -> None:
    md = report_markdown(empty_context())
    assert "No evaluation yet" in md
    assert "## Failing outputs by rule\n\nNo evaluation yet" in md
    assert "**0 tests, 0 run, 0 invalid**" in md


def _status(case: ET.Element) -> str:
    kinds = [child.tag for child in case if child.tag in ("failure", "error", "skipped")]
    assert len(kinds) <= 1
    return kinds[0] if kinds else "passed"


def test_junit_counts_and_statuses() -> None:
    root = ET.fromstring(junit_xml(report_context()))
    assert root.tag == "testsuites"
    assert {k: root.get(k) for k in ("tests", "failures", "errors", "skipped")} == {
        "tests": "9",
        "failures": "4",
        "errors": "1",
        "skipped": "1",
    }
    assert root.get("time") == "2.800"
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    assert list(suites) == [MODEL_A, MODEL_B]
    a, b = suites[MODEL_A], suites[MODEL_B]
    assert (a.get("tests"), a.get("failures"), a.get("errors"), a.get("skipped")) == (
        "4",
        "2",
        "1",
        "0",
    )
    assert (b.get("tests"), b.get("failures"), b.get("errors"), b.get("skipped")) == (
        "5",
        "2",
        "0",
        "1",
    )
    statuses = {(s.get("name"), c.get("name")): _status(c) for s in suites.values() for c in s}
    assert statuses == {
        (MODEL_A, "t1"): "failure",
        (MODEL_A, "t2"): "passed",
        (MODEL_A, "t3"): "failure",
        (MODEL_A, "t4"): "error",
        (MODEL_B, "t1"): "passed",
        (MODEL_B, "t2"): "failure",
        (MODEL_B, "t3"): "passed",
        (MODEL_B, "t4"): "failure",
        (MODEL_B, "t5"): "skipped",
    }


def test_junit_failure_carries_the_reason_and_output() -> None:
    root = ET.fromstring(junit_xml(report_context()))
    case = next(
        c
        for c in root.iter("testcase")
        if (c.get("classname"), c.get("name"))
        == (
            MODEL_A,
            "t1",
        )
    )
    failure = case.find("failure")
    assert failure is not None
    assert failure.get("type") == "non-compliant"
    assert "1 of 2 runs failed: judge-x: Does not start with Hello" in failure.get("message", "")
    assert XSS in (failure.text or "")  # escaped in the file, intact once parsed
    assert "judge-y: Answer is HTML | not a greeting" in (failure.text or "")


def test_junit_survives_control_characters_and_empty_contexts() -> None:
    ctx = report_context()
    ctx.test_runs[0].output = "bell\x07 nul\x00 escape\x1b[31m"
    ET.fromstring(junit_xml(ctx))
    root = ET.fromstring(junit_xml(empty_context()))
    assert root.get("tests") == "0" and list(root) == []


def test_html_escapes_untrusted_text() -> None:
    ctx = report_context()
    evil = 'evil" onmouseover="alert(2)'
    for run in ctx.test_runs:
        run.model = evil if run.model == MODEL_B else run.model
    page = report_html(ctx)
    assert XSS not in page
    assert "&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt; &lt;b&gt;bold&lt;/b&gt;" in page
    assert "<b>bold" not in page and "<b>people" not in page
    assert 'onmouseover="alert' not in page
    assert page.count("<script") == 1 and page.count("</script>") == 1


def test_html_is_self_contained_with_a_strict_policy() -> None:
    page = report_html(report_context())
    script = asset("report.js")
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page)
    assert policy is not None
    assert "default-src &#x27;none&#x27;" in policy.group(1)
    assert f"script-src &#x27;sha256-{digest}&#x27;" in policy.group(1)
    assert f"<script>{script}</script>" in page
    # The SVG namespace is a name, not a fetch; nothing else may point outside the page.
    outside = re.findall(r"(?:src|href)=\"(?!data:)[^\"]*\"|https?://", page)
    assert outside == ["http://"]
    assert "http://www.w3.org/2000/svg" in page
    for name in ("report.js", "report.css"):
        assert "</script" not in asset(name) and "</style" not in asset(name)


def test_html_contents() -> None:
    page = report_html(report_context())
    assert page.count('<rect class="bar"') == 2
    assert page.count('<td class="heat"') == 3 * 2
    assert page.count("<tr data-failing=") == 11
    assert page.count('<tr data-failing="1">') == 4
    assert page.count('<div class="failure">') == 4  # examples, in three rule groups
    assert page.count('<article class="failure-group"') == 3
    assert 'id="filter"' in page and 'id="failing-only"' in page
    assert "No evaluation yet" not in page


def test_html_of_an_empty_context() -> None:
    page = report_html(empty_context())
    assert "No evaluation yet" in page
    assert 'id="results-table"' not in page


def test_write_reports(tmp_path: Path) -> None:
    written = write_reports(report_context(), tmp_path / "out")
    assert [p.name for p in written] == ["overview.csv", "report.md", "report.html"]
    df = pd.read_csv(written[0])
    assert list(df.columns) == COLUMNS and len(df) == len(EXPECTED)
    assert df.loc[0, "latency_p95_ms"] == 385  # written rounded, not 384.99999999999994
    assert written[1].read_text(encoding="utf-8") == report_markdown(report_context())
    empty = write_reports(empty_context(), tmp_path / "empty")
    assert all(p.exists() for p in empty)
    assert "No evaluation yet" in empty[2].read_text(encoding="utf-8")


def _with_faults() -> Context:
    """The report context plus two faulty runs of model-b; the cut-off one still carries
    the compliance verdict an older promptgen gave it."""
    ctx = report_context()
    stale = {"compliance": MetricSummary(score=0.0, outcome="err", judges=1)}
    ctx.test_runs += [
        TestRun(test_id="t5", model=MODEL_B, run_index=1, output="", fault="empty",
                error=f"{MODEL_B}: empty answer"),
        TestRun(test_id="t1", model=MODEL_B, run_index=1, output="Hello A", fault="truncated",
                error=f"{MODEL_B}: answer cut off", metrics=stale),
    ]  # fmt: skip
    return ctx


def test_faulty_outputs_are_counted_apart_and_in_no_rate() -> None:
    ctx = _with_faults()
    assert overall_compliance(ctx) == pytest.approx(62.5)  # unchanged: never judged
    assert error_rate(ctx) == pytest.approx(300 / 13)
    df = overview(ctx)
    row = df[(df["model"] == MODEL_B) & (df["scenario"] == ALL_SCENARIOS)].iloc[0]
    assert (row["runs"], row["errors"], row["faulty"], row["compliance"]) == (8, 2, 2, 75)
    assert df["faulty"].dtype == "int64"
    md = report_markdown(ctx)
    assert (
        "- **Runs:** 13, 3 errored, of which 2 faulty outputs, not judged "
        "(1 empty output, 1 truncated output)"
    ) in md
    assert "| t5 | model-b | 1 | empty output | model-b: empty answer |" in md
    assert "| t1 | model-b | 1 | truncated output | model-b: answer cut off |" in md
    page = report_html(ctx)
    assert '<td class="bad" data-v="" title="model-b: answer cut off">truncated</td>' in page
    assert page.count('<tr data-fault="') == 3 and "2 faulty outputs (not judged)" in page
    assert page.count('<div class="failure">') == 4  # the stale err is no failure


def test_junit_marks_faulty_outputs_as_errors() -> None:
    root = ET.fromstring(junit_xml(_with_faults()))
    suite = next(s for s in root.iter("testsuite") if s.get("name") == MODEL_B)
    cases = {c.get("name"): c for c in suite}
    error = cases["t5"].find("error")  # its other run had no verdict: now an error
    assert error is not None and error.get("type") == "faulty-output"
    assert "run 1: empty output: model-b: empty answer" in (error.text or "")
    error = cases["t1"].find("error")  # run 0 passed; the faulty run 1 is no failure
    assert error is not None and error.get("type") == "faulty-output"
    assert (suite.get("errors"), suite.get("failures"), suite.get("skipped")) == ("2", "2", "0")


def test_reports_never_show_a_key(tmp_path: Path) -> None:
    key, known = "sk-report-canary-0123456789", "registered-value-0123456789"
    secrets.register(known)
    try:
        ctx = report_context()
        ctx.test_runs[4].error = f"401: Incorrect API key provided: {key}"
        ctx.test_runs[0].output = f"echoed {known} back"
        documents = [junit_xml(ctx), *(p.read_text() for p in write_reports(ctx, tmp_path))]
    finally:
        secrets.forget([known])
    for text in documents:
        assert key not in text and known not in text
    assert all("redacted" in text for text in documents[:1] + documents[2:])  # md escapes *


def test_rules_markdown_counts_each_rules_tests() -> None:
    from promptgen.report.outputs import rules_markdown

    ctx = report_context()
    text = rules_markdown(ctx)
    assert "Coverage: every rule and inverse rule has a test (3 of 3)." in text
    rows = [line for line in text.splitlines() if line.startswith("| `rule-")]
    # rule-start: t1 and t5; its inverse: t3; rule-short: t2 and t4, and no inverse.
    assert [row.split(" | ")[2:5] for row in rows] == [
        ["2", "The output does not start with Hello (`inv-start`)", "1"],
        ["2", "(none)", ""],
    ]
    ctx.tests = [t for t in ctx.tests if t.rule_id != "inv-start"]
    ctx.stage("tests").notes["inv-start"] = "every input the model wrote was a duplicate"
    text = rules_markdown(ctx)
    assert "Coverage: 2 of 3 rules and inverse rules have a test; 1 without, 1 with" in text
    assert "| **0**: every input the model wrote was a duplicate |" in text


def test_rules_markdown_lists_the_behaviours_and_the_summary_counts_them() -> None:
    from promptgen.report.coverage import behaviour_line
    from promptgen.report.outputs import rules_markdown, tests_csv, tests_markdown
    from promptgen.results import Behaviour

    ctx = report_context()
    pleased = Behaviour.make("class", "the customer is mostly pleased", expected_class="positive",
                             expected_output="positive")  # fmt: skip
    neutral = Behaviour.make("class", "the review states facts", expected_class="neutral")
    short = Behaviour.make("variety", "the review | is short")
    ctx.behaviours = [pleased, neutral, short]
    first = ctx.tests[0]
    ctx.tests[0] = first.model_copy(
        update={"behaviours": [pleased.id], "expected_class": "positive"}
    )
    ctx.tests[1] = ctx.tests[1].model_copy(update={"behaviours": [short.id]})
    ctx.stage("tests").notes[neutral.id] = "no valid test after 4 tries"
    assert behaviour_line(ctx) == (
        "behaviours   2 of 3 with a test written for them (1 of 2 output classes, 1 with the "
        "class expected); 1 without, 1 with the reason in rules.md"
    )
    text = rules_markdown(ctx).split("## Behaviours", 1)[1]
    assert (
        "Behaviours: 2 of 3 with a test written for them (1 of 2 output classes, 1 with the "
        "class expected); 1 without, 1 with the reason below." in text
    )
    unsorted = ctx.model_copy(deep=True)  # a class test whose input nothing sorted
    unsorted.tests[0] = unsorted.tests[0].model_copy(update={"expected_class": None})
    assert "(1 of 2 output classes, 0 with the class expected)" in behaviour_line(unsorted)
    rows = [line for line in text.splitlines() if line.startswith("| the ")]
    assert rows == [
        "| the customer is mostly pleased | output class | positive | 1 |",
        "| the review states facts | output class | neutral | **0**: no valid test after 4 tries |",
        "| the review \\| is short | boundary |  | 1 |",
    ]
    table = tests_markdown(ctx)
    assert "| the customer is mostly pleased |" in table
    assert "behaviours,valid,inputs,expected_output,expected_class" in tests_csv(ctx)
    assert f",{pleased.id}," in tests_csv(ctx)
