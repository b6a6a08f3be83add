"""The inverse rules stage in process: one inverse per rule, linked by `inverse_of`; a
rule left without one (skipped, or copied) is asked for again in the same unit."""

from __future__ import annotations

from promptgen.llm import LLM
from promptgen.results import Rule
from promptgen.stages import inverse_rules
from tests.fakellm import FakeLLM
from tests.pipeline_fake import PipelineResponder
from tests.stagekit import config, context, schema_names, stage, texts


def test_each_inverse_links_to_its_rule(fake: FakeLLM, llm: LLM) -> None:
    ctx = context(rules=2)
    ctx.inverse_rules = []
    cfg = config(ctx, llm)
    stage("inverse_rules", ctx, cfg, llm)
    one, two = ctx.rules
    assert ctx.inverse_rules == [
        Rule.make("The output breaks requirement 1 (1).", inverse_of=one.id),
        Rule.make("The output breaks requirement 2 (1).", inverse_of=two.id),
    ]
    assert all(r.inverse and r.id.startswith("inv-") for r in ctx.inverse_rules)
    assert ctx.stage("inverse_rules").counts == {"inverse_rules": 2, "rules_without_inverse": 0}
    (text,) = texts(fake, "InverseAnswer")
    assert f"1. {one.text}\n2. {two.text}" in text
    assert inverse_rules.todo(ctx, cfg) == []
    fake.reset()
    stage("inverse_rules", ctx, cfg, llm)
    assert fake.requests == []


def test_only_rules_without_an_inverse_are_asked(fake: FakeLLM, llm: LLM) -> None:
    ctx = context(rules=3)
    kept = ctx.inverse_rules[1]
    ctx.inverse_rules = [kept]
    stage("inverse_rules", ctx, config(ctx, llm), llm)
    (text,) = texts(fake, "InverseAnswer")
    assert f"1. {ctx.rules[0].text}\n2. {ctx.rules[2].text}" in text
    assert ctx.rules[1].text not in text
    assert [r.inverse_of for r in ctx.inverse_rules] == [r.id for r in ctx.rules]  # rule order
    assert ctx.inverse_rules[1] == kept
    assert ctx.inverse_rules[2].text == "The output breaks requirement 2 (1)."


def test_a_copied_rule_is_asked_again(fake: FakeLLM, llm: LLM) -> None:
    fake.responder = PipelineResponder(copy_first_inverse=True)
    ctx = context(rules=2)
    ctx.inverse_rules = []
    stage("inverse_rules", ctx, config(ctx, llm), llm)
    one, two = ctx.rules
    first, again = texts(fake, "InverseAnswer")
    assert f"1. {one.text}\n2. {two.text}" in first
    assert f"1. {one.text}" in again and two.text not in again
    assert [(r.text, r.inverse_of) for r in ctx.inverse_rules] == [
        ("The output breaks requirement 1 (2).", one.id),
        ("The output breaks requirement 2 (1).", two.id),
    ]
    assert ctx.stage("inverse_rules").status == "done"
    assert ctx.stage("inverse_rules").counts["rules_without_inverse"] == 0


def test_failed_calls_are_kept_and_asked_again(
    fake: FakeLLM, llm: LLM, responder: PipelineResponder
) -> None:
    responder.fail_stage = "InverseAnswer"
    ctx = context(rules=2)
    ctx.inverse_rules = []
    cfg = config(ctx, llm)
    stage("inverse_rules", ctx, cfg, llm)
    record = ctx.stage("inverse_rules")
    assert schema_names(fake) == ["InverseAnswer"] * 4  # 2 attempts, each retried once
    assert ctx.inverse_rules == [] and record.status == "failed"
    assert list(record.failures) == ["inverse_rules"]
    assert "HTTP 500" in record.failures["inverse_rules"]
    assert record.counts == {"inverse_rules": 0, "rules_without_inverse": 2}

    responder.fail_stage = None
    fake.reset()
    stage("inverse_rules", ctx, cfg, llm)
    assert schema_names(fake) == ["InverseAnswer"]
    assert len(ctx.inverse_rules) == 2 and record.status == "done" and record.failures == {}
