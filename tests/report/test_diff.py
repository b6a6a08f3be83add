"""`diff_contexts`: two real runs (tests/diff_runs.py) compared, figures checked by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from promptgen import Context, DiffResult, diff_contexts, load_context
from promptgen.report.diff_view import diff_markdown
from promptgen.report.junit import junit_xml
from promptgen.results import MetricSummary
from tests.diff_runs import CHECK, CUSTOM, two_runs
from tests.report_data import CHECK as CHECK_HELLO
from tests.report_data import MODEL_A, MODEL_B, report_context


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Context, Context]:
    then, now = two_runs(tmp_path_factory.mktemp("diff"))
    return load_context(then / "context.json"), load_context(now / "context.json")


@pytest.fixture(scope="module")
def result(runs: tuple[Context, Context]) -> DiffResult:
    return diff_contexts(*runs, "then/context.json", "now/context.json")


def labelled(ctx: Context, label: str) -> str:
    """The id of the test whose input names `label` ("R2": rule 2's test)."""
    (found,) = [t.id for t in ctx.tests if f"-{label}-" in t.inputs["review"]]
    return found


def test_compliance_and_metric_averages_per_model(result: DiffResult) -> None:
    assert result.models == ["m1", "m2"] or result.models == ["m2", "m1"]
    figures = {f.model: f for f in result.overall}
    m1, m2 = figures["m1"], figures["m2"]
    # m1: 2 of 16 runs broke a rule then (R3), 4 of 16 now (R2 and R3)
    assert (m1.compliance.then, m1.compliance.now, m1.compliance.delta) == (87.5, 75.0, -12.5)
    assert (m2.compliance.then, m2.compliance.now, m2.compliance.delta) == (87.5, 100.0, 12.5)
    assert (m1.metrics[CHECK].then, m1.metrics[CHECK].now) == (87.5, 75.0)
    assert (m2.metrics[CHECK].then, m2.metrics[CHECK].now) == (87.5, 100.0)
    assert (m1.metrics[CUSTOM].then, m1.metrics[CUSTOM].now, m1.metrics[CUSTOM].delta) == (
        75.0,
        75.0,
        0.0,
    )
    assert set(m1.metrics) == {CHECK, CUSTOM}


def test_compliance_per_rule_and_model(result: DiffResult, runs: tuple[Context, Context]) -> None:
    _, now = runs
    assert len(result.rules) == 8 and all(r.status == "kept" for r in result.rules)
    assert {r.rule_id for r in result.rules} == {r.id for r in now.all_rules}

    def rates(number: int, model: str, inverse: bool = False) -> tuple[float | None, ...]:
        wanted = f"requirement {number} (" if inverse else f"requirement number {number}."
        rule = next(r for r in result.rules if r.inverse == inverse and wanted in r.text)
        change = rule.by_model[model]
        return change.then, change.now, change.delta

    assert rates(2, "m1") == (100.0, 0.0, -100.0)
    assert rates(3, "m1") == (0.0, 0.0, 0.0)
    assert rates(3, "m2") == (100.0, 100.0, 0.0)
    assert rates(1, "m2", inverse=True) == (0.0, 100.0, 100.0)
    # R4's test has other inputs now, but it targets the same rule: the rule keeps its row
    assert rates(4, "m1") == (100.0, 100.0, 0.0)


def test_tests_added_removed_and_changed(result: DiffResult, runs: tuple[Context, Context]) -> None:
    then, now = runs
    assert [t.test_id for t in result.tests_removed] == [labelled(then, "R4")]
    assert [t.test_id for t in result.tests_added] == [labelled(now, "R4")]
    assert result.tests_added[0].inputs.endswith(' (reworded)"}')
    assert "-R4-0 " in result.tests_added[0].inputs
    assert result.tests_added[0].rule == "The output follows requirement number 4."
    (changed,) = result.tests_changed
    assert changed.test_id == labelled(now, "R1") == labelled(then, "R1")
    assert [(f.name, f.then, f.now) for f in changed.fields] == [
        ("expected_output", "expected for R1 #0", "a reworded expectation")
    ]


def test_runs_that_flipped(result: DiffResult, runs: tuple[Context, Context]) -> None:
    _, now = runs
    assert result.runs_compared == 28  # 32 runs each; R4's 4 runs are in one run only
    assert sorted((f.test_id, f.model, f.run_index) for f in result.pass_to_fail) == [
        (labelled(now, "R2"), "m1", 0),
        (labelled(now, "R2"), "m1", 1),
    ]
    assert sorted((f.test_id, f.model, f.run_index) for f in result.fail_to_pass) == [
        (labelled(now, "I1"), "m2", 0),
        (labelled(now, "I1"), "m2", 1),
    ]
    assert result.pass_to_fail[0].output_now == "m1 answers R2 VIOLATION"
    assert result.pass_to_fail[0].rule == "The output follows requirement number 2."


def test_regressions_at_the_threshold(result: DiffResult) -> None:
    assert result.regressions(12.4) == [
        "m1 compliance 87.5 -> 75.0 (-12.5)",
        f"m1 {CHECK} 87.5 -> 75.0 (-12.5)",
    ]
    assert result.regressions(12.5) == []  # fell by exactly 12.5: not more than
    assert result.same_prompt and result.warnings == []
    assert not result.unchanged


def test_the_markdown_has_the_figures(result: DiffResult, runs: tuple[Context, Context]) -> None:
    _, now = runs
    page = diff_markdown(result)
    assert page.startswith("# promptgen diff: classify-sentiment\n")
    assert "| m1 | compliance | 87.5 | 75.0 | -12.5 |" in page
    assert "| m2 | compliance | 87.5 | 100.0 | +12.5 |" in page
    assert "| m1 | classify-sentiment-compliance | 75.0 | 75.0 | +0.0 |" in page
    assert "1 added, 1 removed, 1 changed; runs in both: 28, pass → fail: 2, fail → pass: 2" in page
    r2 = labelled(now, "R2")
    flips = page.split("## Runs that went from pass to fail", 1)[1].split("## Runs that went")[0]
    assert f"| {r2} | m1 | 0 | The output follows requirement number 2. |" in flips
    assert f"| {r2} | m1 | 1 |" in flips
    assert (
        f"| {labelled(now, 'R1')} | changed | expected\\_output: "
        "'expected for R1 \\#0' → 'a reworded expectation' |" in page
    )


def test_a_run_against_itself_shows_no_change(runs: tuple[Context, Context]) -> None:
    then, _ = runs
    same = diff_contexts(then, then)
    assert same.unchanged and same.regressions(0) == []
    assert not (same.tests_added or same.tests_removed or same.tests_changed)
    assert same.pass_to_fail == same.fail_to_pass == [] and same.runs_compared == 32
    assert all(f.compliance.delta == 0 for f in same.overall)
    assert "no change: every figure, test and verdict is the same" in diff_markdown(same)


def test_other_prompts_are_compared_with_a_warning() -> None:
    then, now = report_context(), report_context()
    now.prompt.name = "farewell"
    result = diff_contexts(then, now)
    assert not result.same_prompt
    assert result.warnings == [
        "A and B are runs of different prompts ('greeter' and 'farewell'): compared anyway; "
        "only rules and tests with the same content join"
    ]
    assert result.runs_compared == 11 and result.unchanged  # the same data otherwise
    edited = report_context()
    edited.prompt_hash = "f" * 64
    (warning,) = diff_contexts(then, edited).warnings
    assert warning.startswith("the prompt 'greeter' changed between the runs (hash ")
    assert warning.endswith(" -> ffffffffffff): compared anyway")


def test_a_model_only_one_run_has_is_shown_but_never_a_regression() -> None:
    then, now = report_context(), report_context()
    now.test_runs = [r for r in now.test_runs if r.model == MODEL_A]
    result = diff_contexts(then, now)
    b = next(f for f in result.overall if f.model == MODEL_B)
    # model-b then: t1 ok, t2 err, t3 ok, t4 ok (t4 run 1 and t5 have no verdict) -> 75
    assert (b.compliance.then, b.compliance.now, b.compliance.delta) == (75.0, None, None)
    assert result.regressions(0) == []
    assert result.runs_compared == 5


def test_errors_and_missing_verdicts_flip_nowhere() -> None:
    then, now = report_context(), report_context()
    for run in now.test_runs:
        if run.model == MODEL_B and run.test_id == "t2":  # was non-compliant
            run.error, run.output = "timeout after 30 s", None
    result = diff_contexts(then, now)
    assert result.pass_to_fail == result.fail_to_pass == []
    b = next(f for f in result.overall if f.model == MODEL_B)
    assert (b.compliance.then, b.compliance.now) == (75.0, 100.0)  # the failure left the rate


def test_without_a_compliance_judge_the_checks_decide() -> None:
    """As in JUnit: a run passes on its checks when no compliance judge ran (`pa run`)."""
    then, now = _checks_only(), _checks_only()
    run = next(r for r in now.test_runs if (r.test_id, r.model) == ("t4", MODEL_B))
    run.metrics["contains=Hello"] = MetricSummary(score=100, outcome="ok", judges=1)
    result = diff_contexts(then, now)
    assert [(f.test_id, f.model, f.run_index) for f in result.fail_to_pass] == [("t4", MODEL_B, 0)]
    assert result.pass_to_fail == []
    # JUnit agrees: t4 on model-b failed then, passes now
    assert 'name="t4" classname="model-b"' in junit_xml(then)
    assert "<failure" in _testcase(junit_xml(then), "t4", MODEL_B)
    assert "<failure" not in _testcase(junit_xml(now), "t4", MODEL_B)
    assert "<skipped" not in _testcase(junit_xml(now), "t4", MODEL_B)


def _checks_only() -> Context:
    ctx = report_context()
    ctx.metrics = [m for m in ctx.metrics if m.kind != "compliance"]
    for run in ctx.test_runs:
        run.metrics.pop("compliance", None)
    ctx.metric_results = []
    return ctx


def _testcase(xml: str, test_id: str, model: str) -> str:
    start = xml.index(f'name="{test_id}" classname="{model}"')
    return xml[start : xml.index("</testcase>", start)]


def test_the_paths_label_the_sides(tmp_path: Path) -> None:
    result = diff_contexts(report_context(), report_context(), tmp_path / "a", "b.json")
    assert (result.then.path, result.now.path) == (str(tmp_path / "a"), "b.json")
    assert result.then.models == [MODEL_A, MODEL_B] and result.then.runs == 11


def test_untrusted_text_is_escaped_in_the_markdown() -> None:
    then, now = report_context(), report_context()
    run = next(r for r in now.test_runs if r.key == ("t1", MODEL_A, 1))  # the XSS output
    run.metrics["compliance"] = MetricSummary(score=100, outcome="ok", judges=1)
    run.metrics[CHECK_HELLO] = MetricSummary(score=100, outcome="ok", judges=1)
    result = diff_contexts(then, now)
    assert [(f.test_id, f.model, f.run_index) for f in result.fail_to_pass] == [("t1", MODEL_A, 1)]
    page = diff_markdown(result)
    assert "<script>" not in page and "</script>" not in page
    assert "&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in page
    # model-a: t1 run 0 ok, run 1 err -> ok, t2 ok, t3 err: 2 of 4 then, 3 of 4 now
    assert "| model-a | compliance | 50.0 | 75.0 | +25.0 |" in page
