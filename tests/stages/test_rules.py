"""The rules stage in process: the answer's rules, capped by maxRules (the cut is
counted); a context that has rules already makes no call."""

from __future__ import annotations

from typing import Any

from promptgen.context import Context
from promptgen.llm import LLM
from promptgen.results import Rule
from promptgen.stages import rules
from tests.fakellm import FakeLLM
from tests.pipeline_fake import PipelineResponder
from tests.stagekit import config, context, prompt, schema_names, stage

TEXTS = [f"The output follows requirement number {i}." for i in range(1, 5)]


class Twice(PipelineResponder):
    """Repeats the first rule at the end of the rules answer, padded with spaces."""

    def answer(self, name: str, schema: dict[str, Any], text: str, n: int) -> Any:
        answer = super().answer(name, schema, text, n)
        if name == "RulesAnswer":
            answer["rules"] = [*answer["rules"], f"  {TEXTS[0]}  "]
        return answer


def test_rules_are_written_with_content_ids(fake: FakeLLM, llm: LLM) -> None:
    ctx = Context.new(prompt())
    cfg = config(ctx, llm)
    stage("rules", ctx, cfg, llm)
    assert [r.text for r in ctx.rules] == TEXTS
    assert [r.id for r in ctx.rules] == [Rule.make(t).id for t in TEXTS]
    assert not any(r.inverse for r in ctx.rules)
    assert ctx.stage("rules").counts == {"rules": 4, "over_max_rules": 0}
    assert ctx.stage("rules").status == "done"
    assert schema_names(fake) == ["RulesAnswer"]
    assert rules.todo(ctx, cfg) == []
    fake.reset()
    stage("rules", ctx, cfg, llm)
    assert fake.requests == []


def test_max_rules_cuts_and_counts(fake: FakeLLM, llm: LLM) -> None:
    ctx = Context.new(prompt())
    stage("rules", ctx, config(ctx, llm, generation={"max_rules": 3}), llm)
    assert [r.text for r in ctx.rules] == TEXTS[:3]
    assert ctx.stage("rules").counts == {"rules": 3, "over_max_rules": 1}


def test_duplicate_rules_are_kept_once(fake: FakeLLM, llm: LLM) -> None:
    fake.responder = Twice()
    ctx = Context.new(prompt())
    stage("rules", ctx, config(ctx, llm), llm)
    assert [r.text for r in ctx.rules] == TEXTS
    assert ctx.stage("rules").counts == {
        "rules": 4,
        "over_max_rules": 0,
        "near_duplicates_merged": 1,
    }


class NearDuplicates(PipelineResponder):
    def answer(self, name: str, schema: dict[str, Any], text: str, n: int) -> Any:
        return {"rules": NEAR} if name == "RulesAnswer" else super().answer(name, schema, text, n)


NEAR = [
    "The output must not repeat the review.",
    "The output must not repeat the review text.",  # the same rule again
    "The output MUSTN'T repeat the review",  # and again
    "The output repeats the review.",  # a negation apart: another rule
    "The output has at most 50 words.",
    "The output has at most 60 words.",  # a number apart: another rule
]


def test_near_duplicate_rules_are_merged(fake: FakeLLM, llm: LLM) -> None:
    fake.responder = NearDuplicates()
    ctx = Context.new(prompt())
    stage("rules", ctx, config(ctx, llm), llm)
    assert [r.text for r in ctx.rules] == [NEAR[0], *NEAR[3:]]
    assert ctx.stage("rules").counts["near_duplicates_merged"] == 2


def test_rules_from_a_tests_file_are_kept(fake: FakeLLM, llm: LLM) -> None:
    ctx = context(rules=2)
    before = list(ctx.rules)
    cfg = config(ctx, llm)
    assert rules.todo(ctx, cfg) == []
    stage("rules", ctx, cfg, llm)
    assert ctx.rules == before and fake.requests == []


def test_failed_call_is_kept_and_asked_again(
    fake: FakeLLM, llm: LLM, responder: PipelineResponder
) -> None:
    responder.fail_stage = "RulesAnswer"
    ctx = Context.new(prompt())
    cfg = config(ctx, llm)
    stage("rules", ctx, cfg, llm)
    record = ctx.stage("rules")
    assert ctx.rules == [] and record.status == "failed"
    assert list(record.failures) == ["rules"] and "HTTP 500" in record.failures["rules"]
    assert record.counts == {}

    responder.fail_stage = None
    fake.reset()
    stage("rules", ctx, cfg, llm)
    assert schema_names(fake) == ["RulesAnswer"]
    assert len(ctx.rules) == 4 and record.status == "done" and record.failures == {}
