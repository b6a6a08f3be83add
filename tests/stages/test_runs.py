"""The runs stage in process: one TestRun per (test, model, run index), each judged as
soon as it returns; a failing model's cells are kept with their errors, one failure per
cell, and only those are asked again."""

from __future__ import annotations

import json
from collections import Counter

from promptgen.context import Context
from promptgen.llm import LLM
from promptgen.results import MetricSummary, TestRun
from promptgen.stages import runs
from tests.fakellm import FakeLLM
from tests.pipeline_fake import PipelineResponder
from tests.stagekit import config, context, schema_names, stage

A, B = "openai/model-a", "openai/model-b"
JUDGE = "openai/judge-model"
OK = MetricSummary(score=100.0, outcome="ok", judges=1, errors=0)


def cells(ctx: Context) -> list[tuple[str, str, int]]:
    return sorted(r.key for r in ctx.test_runs)


def test_one_run_per_cell_judged_at_once(fake: FakeLLM, llm: LLM) -> None:
    ctx = context(rules=1, tests=2)
    cfg = config(ctx, llm, models={"models": [A, B]}, evaluation={"runs_per_test": 2})
    stage("runs", ctx, cfg, llm)
    expected = sorted((t.id, m, i) for t in ctx.tests for m in (A, B) for i in range(2))
    assert cells(ctx) == expected
    assert Counter(schema_names(fake)) == {"text": 8, "ComplianceVerdict": 8}
    assert Counter(b["model"] for b in fake.requests) == {
        "model-a": 4, "model-b": 4, "judge-model": 8
    }  # fmt: skip
    for run in ctx.test_runs:
        assert run.error is None and run.output is not None
        assert run.output.startswith(f"{run.model.removeprefix('openai/')} answer ")
        assert run.metrics == {"compliance": OK}
    assert sorted(r.key[:3] for r in ctx.metric_results) == expected
    assert {(r.metric, r.judge, r.outcome) for r in ctx.metric_results} == {
        ("compliance", JUDGE, "ok")
    }
    assert ctx.stage("runs").status == "done" and runs.todo(ctx, cfg) == []
    fake.reset()
    stage("runs", ctx, cfg, llm)
    assert fake.requests == []


def test_a_bad_output_is_judged_err(fake: FakeLLM, llm: LLM, responder: PipelineResponder) -> None:
    responder.bad_every = 2  # every 2nd output of a model says VIOLATION
    ctx = context(rules=1, tests=4)
    stage("runs", ctx, config(ctx, llm, models={"models": [A]}), llm)
    outcomes = [r.metrics["compliance"].outcome for r in ctx.test_runs]
    assert Counter(outcomes) == {"ok": 2, "err": 2}
    for run in ctx.test_runs:
        bad = "VIOLATION" in (run.output or "")
        assert run.metrics["compliance"].score == (0.0 if bad else 100.0)


def test_a_failing_model_fails_its_cells_only(
    fake: FakeLLM, llm: LLM, responder: PipelineResponder
) -> None:
    responder.failing_models = {"model-b": 1}  # every call of model-b fails
    ctx = context(rules=1, tests=2)
    cfg = config(ctx, llm, models={"models": [A, B]}, evaluation={"runs_per_test": 2})
    stage("runs", ctx, cfg, llm)
    failed = [r for r in ctx.test_runs if r.error is not None]
    assert sorted(r.key for r in failed) == sorted(
        (t.id, B, i) for t in ctx.tests for i in range(2)
    )
    assert all(r.output is None and r.metrics == {} and "HTTP 400" in (r.error or "")
               for r in failed)  # fmt: skip
    record = ctx.stage("runs")
    assert sorted(record.failures) == sorted(runs.cell_key(*r.key) for r in failed)
    assert record.status == "failed" and record.error and record.error.startswith("4 units")
    assert Counter(schema_names(fake)) == {"text": 8, "ComplianceVerdict": 4}
    assert all(r.metrics == {"compliance": OK} for r in ctx.test_runs if r.model == A)

    responder.failing_models = {}
    fake.reset()
    stage("runs", ctx, cfg, llm)
    assert Counter(b["model"] for b in fake.requests) == {"model-b": 4, "judge-model": 4}
    assert len(ctx.test_runs) == 8  # the failed records are replaced
    assert all(r.ok and r.metrics == {"compliance": OK} for r in ctx.test_runs)
    assert record.failures == {} and record.status == "done"


def test_no_compliance_no_judge(fake: FakeLLM, llm: LLM) -> None:
    ctx = context(rules=1, tests=2)
    cfg = config(ctx, llm, models={"models": [A]}, evaluation={"compliance": False})
    stage("runs", ctx, cfg, llm)
    assert schema_names(fake) == ["text", "text"]
    assert all(r.ok and r.metrics == {} for r in ctx.test_runs) and ctx.metric_results == []


def test_a_faulty_cell_is_asked_again_and_older_contexts_load() -> None:
    ctx = context(rules=1, tests=2)
    cfg = config(ctx, None, models={"models": [A]})
    first, second = ctx.tests
    ctx.test_runs = [
        TestRun(test_id=first.id, model=A, output="", fault="empty", error=f"{A}: empty answer"),
        TestRun(test_id=second.id, model=A, output="positive"),
    ]
    assert [(i.data[0].id, i.data[3]) for i in runs.todo(ctx, cfg)] == [(first.id, True)]
    # A context written before faults were recorded has no `fault` key: it loads as none.
    data = json.loads(ctx.to_json())
    for record in data["test_runs"]:
        del record["fault"]
    loaded = Context.model_validate(data)
    assert [r.fault for r in loaded.test_runs] == [None, None]
    assert [r.ok for r in loaded.test_runs] == [False, True]  # the error still says so
