"""The input specification stage in process: the answer's constraints become a bullet
list in `ctx.input_spec`; a failed call is kept and asked again."""

from __future__ import annotations

from promptgen.context import Context
from promptgen.llm import LLM
from promptgen.stages import input_spec
from tests.fakellm import FakeLLM
from tests.pipeline_fake import PipelineResponder
from tests.stagekit import config, prompt, schema_names, stage, texts

SPEC = "- Each input is a non-empty string.\n- Inputs are English."


def test_constraints_become_the_specification(fake: FakeLLM, llm: LLM) -> None:
    ctx = Context.new(prompt())
    cfg = config(ctx, llm)
    stage("input_spec", ctx, cfg, llm)
    assert ctx.input_spec == SPEC
    assert schema_names(fake) == ["InputSpecAnswer"]
    (text,) = texts(fake, "InputSpecAnswer")
    assert "- review (string)" in text  # the prompt's inputs are listed
    assert ctx.stage("input_spec").status == "done"
    assert input_spec.todo(ctx, cfg) == []
    fake.reset()
    stage("input_spec", ctx, cfg, llm)
    assert fake.requests == []


def test_failed_call_is_kept_and_asked_again(
    fake: FakeLLM, llm: LLM, responder: PipelineResponder
) -> None:
    responder.fail_stage = "InputSpecAnswer"
    ctx = Context.new(prompt())
    cfg = config(ctx, llm)
    stage("input_spec", ctx, cfg, llm)
    record = ctx.stage("input_spec")
    assert ctx.input_spec is None
    assert list(record.failures) == ["input_spec"] and record.status == "failed"
    assert "HTTP 500" in record.failures["input_spec"]

    responder.fail_stage = None
    fake.reset()
    stage("input_spec", ctx, cfg, llm)
    assert schema_names(fake) == ["InputSpecAnswer"]
    assert ctx.input_spec == SPEC and record.status == "done" and record.failures == {}
