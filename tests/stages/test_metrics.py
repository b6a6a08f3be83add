"""The metrics stage in process: it scores what the runs left unscored; accuracy only
once a test's groundtruth is accepted; a failed verdict is a failure of its own and is
asked again; checks need no call."""

from __future__ import annotations

from promptgen.context import Context
from promptgen.llm import LLM
from promptgen.results import MetricSummary, TestRun
from promptgen.stages import metrics
from tests.fakellm import FakeLLM
from tests.pipeline_fake import PipelineResponder
from tests.stagekit import config, context, schema_names, stage, texts

A = "openai/model-a"
JUDGE = "openai/judge-model"
OK = MetricSummary(score=100.0, outcome="ok", judges=1, errors=0)


def with_runs(tests: int) -> Context:
    """A context whose tests each have one run of model A, not judged yet."""
    ctx = context(rules=1, tests=tests)
    ctx.test_runs = [TestRun(test_id=t.id, model=A, output=f"label {t.id}") for t in ctx.tests]
    return ctx


def verdicts(ctx: Context) -> list[tuple[str, str, str | None, float | None, str | None]]:
    return sorted((r.test_id, r.metric, r.judge, r.score, r.outcome) for r in ctx.metric_results)


def test_accuracy_only_after_the_groundtruth_is_accepted(fake: FakeLLM, llm: LLM) -> None:
    ctx = with_runs(3)
    cfg = config(ctx, llm, models={"models": [A]}, evaluation={"groundtruth": True})
    ctx.use_metrics([m.info for m in cfg.output_metrics])
    stage("metrics", ctx, cfg, llm)
    assert schema_names(fake) == ["ComplianceVerdict"] * 3
    assert verdicts(ctx) == sorted((t.id, "compliance", JUDGE, 100.0, "ok") for t in ctx.tests)
    assert metrics.todo(ctx, cfg) == []

    accepted, rejected, _ = ctx.tests
    accepted.groundtruth, accepted.groundtruth_status = "the reference label", "ok"
    rejected.groundtruth, rejected.groundtruth_status = "a poor label", "invalid"
    assert [i.key for i in metrics.todo(ctx, cfg)] == [f"{accepted.id}|{A}|0|accuracy|{JUDGE}"]
    fake.reset()
    stage("metrics", ctx, cfg, llm)
    (text,) = texts(fake, "ScoreVerdict")
    assert "the reference label" in text and f"label {accepted.id}" in text
    assert (accepted.id, "accuracy", JUDGE, 75.0, "ok") in verdicts(ctx)
    assert len(ctx.metric_results) == 4
    run = next(r for r in ctx.test_runs if r.test_id == accepted.id)
    assert run.metrics == {
        "compliance": OK,
        "accuracy": MetricSummary(score=75.0, outcome="ok", judges=1, errors=0),
    }
    fake.reset()
    stage("metrics", ctx, cfg, llm)
    assert fake.requests == []


def test_failed_verdicts_are_failures_and_asked_again(
    fake: FakeLLM, llm: LLM, responder: PipelineResponder
) -> None:
    responder.fail_stage = "ComplianceVerdict"
    ctx = with_runs(2)
    cfg = config(ctx, llm, models={"models": [A]})
    stage("metrics", ctx, cfg, llm)
    record = ctx.stage("metrics")
    assert sorted(record.failures) == sorted(f"{t.id}|{A}|0|compliance|{JUDGE}" for t in ctx.tests)
    assert record.status == "failed"
    assert all(r.error and r.score is None for r in ctx.metric_results)
    failed = MetricSummary(score=None, outcome="unknown", judges=0, errors=1)
    assert [r.metrics for r in ctx.test_runs] == [{"compliance": failed}] * 2

    responder.fail_stage = None
    fake.reset()
    stage("metrics", ctx, cfg, llm)
    assert schema_names(fake) == ["ComplianceVerdict"] * 2
    assert verdicts(ctx) == sorted((t.id, "compliance", JUDGE, 100.0, "ok") for t in ctx.tests)
    assert [r.metrics for r in ctx.test_runs] == [{"compliance": OK}] * 2
    assert record.failures == {} and record.status == "done"


def test_checks_need_no_call_and_failed_runs_no_verdict(fake: FakeLLM, llm: LLM) -> None:
    ctx = with_runs(2)
    ctx.test_runs[1].output, ctx.test_runs[1].error = None, "model-a: timed out"
    evaluation = {"compliance": False, "checks": ["starts-with=label", "contains=nothing"]}
    cfg = config(ctx, llm, models={"models": [A]}, evaluation=evaluation)
    assert [i.calls for i in metrics.todo(ctx, cfg)] == [0, 0]
    stage("metrics", ctx, cfg, llm)
    assert fake.requests == []
    test = ctx.tests[0].id
    assert verdicts(ctx) == [
        (test, "contains=nothing", None, 0.0, "err"),
        (test, "starts-with=label", None, 100.0, "ok"),
    ]
    assert ctx.test_runs[1].metrics == {}


def test_runs_judged_by_the_runs_stage_need_nothing_more(fake: FakeLLM, llm: LLM) -> None:
    ctx = context(rules=1, tests=2)
    cfg = config(ctx, llm, models={"models": [A]})
    stage("runs", ctx, cfg, llm)
    assert metrics.todo(ctx, cfg) == []
    fake.reset()
    stage("metrics", ctx, cfg, llm)
    assert fake.requests == [] and ctx.stage("metrics").status == "done"
