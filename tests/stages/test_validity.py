"""The validity stage in process: unjudged tests in batches of 8 (one for a small
judge); a test an answer leaves out is asked again in a smaller call within the same
run; each failed batch is a failure of its own."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from promptgen.llm import LLM, load_settings
from promptgen.stages import validity
from tests.fakellm import FakeLLM
from tests.pipeline_fake import DropOnce, PipelineResponder
from tests.stagekit import config, context, schema_names, stage, texts


class DropLast(PipelineResponder):
    """Never gives a verdict on the last test it is shown."""

    def answer(self, name: str, schema: dict[str, Any], text: str, n: int) -> Any:
        answer = super().answer(name, schema, text, n)
        if name == "Verdicts":
            answer.pop(list(answer)[-1])
        return answer


def shown(request_text: str) -> list[str]:
    """The numbered tests a validity call shows: `1. {...}`."""
    return [line for line in request_text.splitlines() if line[:1].isdigit() and ". {" in line]


def test_tests_are_judged_in_batches(fake: FakeLLM, llm: LLM) -> None:
    ctx = context(rules=1, tests=10)
    ctx.tests[0].valid = True  # judged already: not asked again
    cfg = config(ctx, llm)
    stage("validity", ctx, cfg, llm)
    assert sorted(len(shown(t)) for t in texts(fake, "Verdicts")) == [1, 8]
    assert {b["model"] for b in fake.requests} == {"judge-model"}
    assert all(t.valid is not None for t in ctx.tests)
    # The fake says "invalid" where call number + item number is a multiple of 7: once.
    assert [t.valid for t in ctx.tests].count(False) == 1
    assert {t.validity_reason for t in ctx.tests[1:]} == {"meets the specification"}
    record = ctx.stage("validity")
    assert record.counts == {"valid": 9, "invalid": 1} and record.status == "done"
    assert validity.todo(ctx, cfg) == []
    fake.reset()
    stage("validity", ctx, cfg, llm)
    assert fake.requests == []


def test_a_test_left_out_is_asked_again_alone(fake: FakeLLM, llm: LLM) -> None:
    fake.responder = DropOnce("Verdicts")
    ctx = context(rules=1, tests=3)
    stage("validity", ctx, config(ctx, llm), llm)
    first, again = texts(fake, "Verdicts")
    assert len(shown(first)) == 3
    assert shown(again) == [f"1. {json.dumps(ctx.tests[1].inputs)}"]
    assert all(t.valid is True for t in ctx.tests)
    record = ctx.stage("validity")
    assert record.status == "done" and record.failures == {} and record.error is None


def test_a_test_never_judged_is_a_failure(fake: FakeLLM, llm: LLM) -> None:
    fake.responder = DropLast()
    ctx = context(rules=1, tests=3)
    cfg = config(ctx, llm)
    stage("validity", ctx, cfg, llm)
    first, again = texts(fake, "Verdicts")  # the last test is asked again once
    assert len(shown(first)) == 3 and len(shown(again)) == 1
    assert [t.valid for t in ctx.tests] == [True, True, None]
    (left,) = validity.todo(ctx, cfg)
    record = ctx.stage("validity")
    assert record.failures[left.key] == "1 test(s) got no verdict; a re-run asks again"
    assert record.status == "failed"


def test_each_failed_batch_is_a_failure(
    fake: FakeLLM, llm: LLM, responder: PipelineResponder
) -> None:
    responder.fail_stage = "Verdicts"
    ctx = context(rules=1, tests=10)
    cfg = config(ctx, llm)
    batches = [i.key for i in validity.todo(ctx, cfg)]
    stage("validity", ctx, cfg, llm)
    assert schema_names(fake) == ["Verdicts"] * 4  # each batch once (and retried once)
    record = ctx.stage("validity")
    assert len(batches) == 2 and sorted(record.failures) == sorted(batches)
    assert record.status == "failed" and all(t.valid is None for t in ctx.tests)

    responder.fail_stage = None
    fake.reset()
    stage("validity", ctx, cfg, llm)
    assert schema_names(fake) == ["Verdicts"] * 2
    assert record.failures == {} and all(t.valid is not None for t in ctx.tests)


def test_a_small_judge_gets_one_test_a_call(tmp_path: Path) -> None:
    """The embedded 1.5B judging eight at once leaned on the verdicts beside: an unchanged
    haiku topic was valid in one batch and invalid in another."""
    ctx = context(rules=1, tests=10)
    local = LLM(load_settings({"eval": "local/qwen2.5-coder-1.5b"}, env={}, cwd=tmp_path))
    remote = LLM(load_settings({"api_base": "http://127.0.0.1:9/v1"}, env={}, cwd=tmp_path))
    assert [len(w.data) for w in validity.todo(ctx, config(ctx, local))] == [1] * 10
    assert [len(w.data) for w in validity.todo(ctx, config(ctx, remote))] == [8, 2]
