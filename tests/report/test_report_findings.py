"""The report sections a reviewer acts on, checked against hand-computed figures for
tests/report_data.py: the tests headline, groundtruth statuses, rule groundedness, the
failures grouped by rule (worst first), the input column and number formatting."""

from __future__ import annotations

import re

from rich.console import Console

from promptgen.context import Context
from promptgen.report.findings import count_tests, failure_groups, inputs_text
from promptgen.report.html import report_html
from promptgen.report.markdown import report_markdown
from promptgen.report.overview import overview, print_overview
from promptgen.results import MetricSummary, Rule, Test, TestRun
from tests.report.html_cells import table_column, table_rows
from tests.report_data import MODEL_A, MODEL_B, empty_context, report_context


def _section(md: str, heading: str) -> str:
    start = md.index(f"\n## {heading}\n")
    end = md.find("\n## ", start + 1)
    return md[start : end if end != -1 else None]


def _headline(page: str) -> str:
    found = re.search(r'<p id="headline" class="headline">([^<]*)</p>', page)
    assert found is not None
    return found.group(1)


def _census() -> Context:
    """54 tests: 35 valid ones run once on one model, 19 invalid ones never run."""
    ctx = empty_context()
    for i in range(54):
        valid = i < 35
        ctx.tests.append(
            Test(
                id=f"t{i:02d}",
                inputs={"text": f"input {i}"},
                valid=valid,
                validity_reason=None if valid else f"reason {i} <x>",
            )
        )
    for test in ctx.tests[:35]:
        verdict = MetricSummary(score=100.0, outcome="ok", judges=1)
        ctx.test_runs.append(
            TestRun(test_id=test.id, model="m", output="fine", metrics={"compliance": verdict})
        )
    return ctx


def test_the_headline_counts_tests_run_and_invalid() -> None:
    ctx = _census()
    assert count_tests(ctx).headline() == "54 tests, 35 run, 19 invalid"
    md, page = report_markdown(ctx), report_html(ctx)
    assert "## Summary\n\n**54 tests, 35 run, 19 invalid**\n" in md
    assert _headline(page) == "54 tests, 35 run, 19 invalid"
    assert '<div class="value">54</div><div class="note">35 run, 19 invalid</div>' in page
    # The invalid tests stand apart, with their reason, and nowhere else.
    invalid = table_rows(page, "invalid-table")
    assert [r[0] for r in invalid] == [f"t{i}" for i in range(35, 54)]
    assert invalid[0] == ["t35", "-", "(none)", "input 35", "reason 35 <x>"]
    assert [r[0] for r in table_rows(page, "tests-table")] == [f"t{i:02d}" for i in range(35)]
    assert set(table_column(page, "results-table", "Test")) == {f"t{i:02d}" for i in range(35)}
    rows = re.findall(r"^\| (t\d\d) \|.*\| (.*) \|$", _section(md, "Invalid tests"), re.M)
    assert rows == [(f"t{i}", f"reason {i} &lt;x&gt;") for i in range(35, 54)]


def test_the_headline_says_when_invalid_tests_ran_or_valid_ones_did_not() -> None:
    ctx = report_context()  # t3 is invalid and was run (as with --keep-invalid)
    assert count_tests(ctx).headline() == "5 tests, 5 run, 1 invalid (1 of them run)"
    ctx.test_runs = [r for r in ctx.test_runs if r.test_id != "t5"]
    assert (
        count_tests(ctx).headline() == "5 tests, 4 run, 1 invalid (1 of them run), 1 valid not run"
    )
    assert "1 of them ran here" in _section(report_markdown(ctx), "Invalid tests")
    ctx.tests[4].safety = "harmful"  # t5, not run: flagged by the safety judge, not "valid"
    assert count_tests(ctx).headline() == "5 tests, 4 run, 1 invalid (1 of them run), 1 unsafe"


def test_groundtruth_answers_and_their_status() -> None:
    ctx = report_context()
    md = _section(report_markdown(ctx), "Groundtruth")
    assert (
        "3 answers: 1 accepted, 1 invalid, 1 author-given; from gt-model; accepted when the "
        "eval models' average score reaches 80."
    ) in md
    assert "| t1 | Ada | accepted | gt-model | 83.3 | Hello Ada, welcome. |" in md
    assert "| t2 | Bob \\| Smith Jr | invalid | gt-model | 12.5 | &lt;b&gt;Hi&lt;/b&gt; Bob |" in md
    assert "| t4 | Zed | author-given | test author | - | Hello Zed. |" in md
    page = report_html(ctx)
    assert table_rows(page, "groundtruth-table") == [
        ["t1", "Ada", "accepted", "gt-model", "83.3", "Hello Ada, welcome."],
        ["t2", "Bob | Smith Jr", "invalid", "gt-model", "12.5", "<b>Hi</b> Bob"],
        ["t4", "Zed", "author-given", "test author", "-", "Hello Zed."],
    ]
    statuses = re.findall(r'<tr data-status="(\w+)">', page)
    assert statuses == ["ok", "invalid", "author"]
    assert "<b>Hi</b>" not in page


def test_rule_groundedness_verdicts() -> None:
    ctx = report_context()
    ctx.rules.append(Rule(id="rule-x", text="The output rhymes"))
    ctx.stage("groundedness").failures = {"rule-x": "judge timed out"}
    md = _section(report_markdown(ctx), "Rule groundedness")
    assert "3 rules: 1 grounded, 1 not grounded, 1 check failed" in md
    rows = re.findall(r"^\| (rule-\w+) \| .* \| ([a-z ]+) \| (.*) \|$", md, re.M)
    assert rows == [
        ("rule-short", "not grounded", "The prompt &lt;i&gt;never&lt;/i&gt; limits the length"),
        ("rule-x", "check failed", "judge timed out"),
        ("rule-start", "grounded", "The system message says: Always start with Hello."),
    ]
    page = report_html(ctx)
    assert [r[2] for r in table_rows(page, "groundedness-table")] == [
        "not grounded",
        "check failed",
        "grounded",
    ]
    assert table_rows(page, "groundedness-table")[0][3] == (
        "The prompt <i>never</i> limits the length"
    )
    for rule in ctx.rules:
        rule.grounded = None
    ctx.stages.clear()
    assert "Not checked" in _section(report_markdown(ctx), "Rule groundedness")


def test_failures_are_grouped_by_rule_worst_first() -> None:
    ctx = report_context()
    groups = failure_groups(ctx)
    assert [(g.rule_id, g.total_failed, g.total_runs) for g in groups] == [
        ("rule-short", 2, 4),
        ("inv-start", 1, 2),
        ("rule-start", 1, 4),
    ]
    assert groups[0].failed == {MODEL_A: 0, MODEL_B: 2}
    assert groups[0].runs == {MODEL_A: 1, MODEL_B: 3}  # the errored run is in no count
    md = _section(report_markdown(ctx), "Failing outputs by rule")
    titles = re.findall(r"^### (\d)\. (.*)$", md, re.M)
    assert titles == [
        ("1", "The output is one sentence \\| no more"),
        ("2", "The output does not start with Hello (inverse rule)"),
        ("3", "The output starts with Hello"),
    ]
    assert "`rule-short`: **2 of 4 runs failed** (50.0%)" in md
    assert "| model-b | 2 | 3 | 66.7% |" in md and "| model-a | 0 | 1 | 0.0% |" in md
    assert "`rule-start`: **1 of 4 runs failed** (25.0%)" in md
    page = report_html(ctx)
    articles = re.findall(
        r'<article class="failure-group" data-rule="([\w-]+)" data-failed="(\d+)" '
        r'data-runs="(\d+)">',
        page,
    )
    assert articles == [("rule-short", "2", "4"), ("inv-start", "1", "2"), ("rule-start", "1", "4")]
    assert page.count("<details><summary>Failing examples (") == 3
    assert "Failing examples (2 of 2)</summary>" in page


def test_a_group_shows_a_few_examples_taking_each_model_in_turn() -> None:
    ctx = report_context()
    err = MetricSummary(score=0.0, outcome="err", judges=1)
    ctx.test_runs += [
        TestRun(test_id="t2", model=MODEL_A, run_index=i, output=f"bad {i}",
                metrics={"compliance": err})
        for i in range(1, 6)
    ]  # fmt: skip
    top = failure_groups(ctx)[0]
    assert (top.rule_id, top.total_failed, top.total_runs) == ("rule-short", 7, 9)
    shown = [(f.run.test_id, f.run.model, f.run.run_index) for f in top.examples]
    assert shown == [("t2", MODEL_A, 1), ("t2", MODEL_B, 0), ("t2", MODEL_A, 2)]
    md = _section(report_markdown(ctx), "Failing outputs by rule")
    assert "`rule-short`: **7 of 9 runs failed** (77.8%)" in md
    assert "Examples (3 of 7):" in md
    assert "Failing examples (3 of 7)</summary>" in report_html(ctx)


def test_the_results_table_has_an_input_column() -> None:
    page = report_html(report_context())
    assert table_column(page, "results-table", "Input") == [
        "Ada", "Ada", "Bob | Smith Jr", "Eve", "Zed", "Ada", "Bob | Smith Jr", "Eve", "Zed",
        "Zed", "Kim",
    ]  # fmt: skip
    assert 'title="{\n  &quot;name&quot;: &quot;Bob | Smith\\nJr&quot;\n}"' in page
    assert inputs_text({"a": 1, "b": "x"}) == "a: 1; b: x"
    long = inputs_text({"text": "word " * 60})
    assert len(long) == 80 and long.endswith("…")
    assert inputs_text({}) == "(none)"


def test_numbers_read_as_in_the_terminal() -> None:
    ctx = report_context()
    ctx.test_runs[0].metrics["accuracy"].score = 100 / 3
    console = Console(record=True, width=200)
    print_overview(overview(ctx), console)
    terminal = console.export_text()
    row = next(line for line in terminal.splitlines() if "model-a" in line and "(all)" in line)
    # model-a (all): compliance 50.0, rules 66.7, inverse 0.0, valid 66.7, accuracy 45.8
    assert row.split()[7:12] == ["50.0", "66.7", "0.0", "66.7", "45.8"]
    md, page = report_markdown(ctx), report_html(ctx)
    assert "| model-a | (all) | 4 | 5 | 1 | 0 | 0 | 50.0 | 66.7 | 0.0 | 66.7 | 45.8 | 50.0 |" in md
    assert table_column(page, "results-table", "accuracy")[0] == "33.3"
    assert table_rows(page, "groundtruth-table")[0][4] == "83.3"
    # One decimal everywhere; only costs have four, as in the terminal; none has more.
    shown = re.sub(r'<style>.*?</style>|data-v="[^"]*"', "", page, flags=re.S)
    for text in (md, shown):
        assert re.findall(r"\b\d+\.\d{2,3}\b|\d\.\d{5,}", text) == []
