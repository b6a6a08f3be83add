"""The groundedness stage in process: one call per rule (not per inverse) sets
`grounded` and its reason; each failed rule is a failure of its own."""

from __future__ import annotations

from promptgen.llm import LLM
from promptgen.stages import groundedness
from tests.fakellm import FakeLLM
from tests.pipeline_fake import PipelineResponder
from tests.stagekit import FailWhen, config, context, schema_names, stage, texts


def test_each_rule_is_judged_once(fake: FakeLLM, llm: LLM) -> None:
    ctx = context(rules=5)
    cfg = config(ctx, llm)
    stage("groundedness", ctx, cfg, llm)
    assert schema_names(fake) == ["Grounded"] * 5
    assert {b["model"] for b in fake.requests} == {"judge-model"}  # the eval alias
    assert [sum(r.text in t for t in texts(fake, "Grounded")) for r in ctx.rules] == [1] * 5
    # The fake answers "not grounded" to its 5th call only.
    assert sorted(r.grounded for r in ctx.rules) == [False, True, True, True, True]
    assert {r.grounded_reason for r in ctx.rules} == {"stated in the prompt"}
    assert all(r.grounded is None for r in ctx.inverse_rules)
    assert groundedness.todo(ctx, cfg) == []
    fake.reset()
    stage("groundedness", ctx, cfg, llm)
    assert fake.requests == []


def test_three_failed_rules_are_three_failures(
    fake: FakeLLM, llm: LLM, responder: PipelineResponder
) -> None:
    responder.fail_stage = "Grounded"
    ctx = context(rules=3)
    cfg = config(ctx, llm)
    stage("groundedness", ctx, cfg, llm)
    record = ctx.stage("groundedness")
    assert set(record.failures) == {r.id for r in ctx.rules}
    assert record.status == "failed"
    assert record.error is not None and record.error.startswith("3 units failed, e.g. ")
    assert all(r.grounded is None for r in ctx.rules)

    responder.fail_stage = None
    fake.reset()
    stage("groundedness", ctx, cfg, llm)
    assert schema_names(fake) == ["Grounded"] * 3
    assert all(r.grounded is True for r in ctx.rules)
    assert record.status == "done" and record.failures == {}


def test_a_rerun_asks_only_the_rule_that_failed(fake: FakeLLM, llm: LLM) -> None:
    ctx = context(rules=3)
    fake.responder = FailWhen(ctx.rules[1].text)
    cfg = config(ctx, llm)
    stage("groundedness", ctx, cfg, llm)
    assert list(ctx.stage("groundedness").failures) == [ctx.rules[1].id]
    assert [r.grounded is None for r in ctx.rules] == [False, True, False]

    fake.responder = PipelineResponder()
    fake.reset()
    stage("groundedness", ctx, cfg, llm)
    (text,) = texts(fake, "Grounded")
    assert ctx.rules[1].text in text
    assert ctx.rules[1].grounded is True and ctx.stage("groundedness").failures == {}
