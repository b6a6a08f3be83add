"""The intent stage in process: one call writes `ctx.intent`; a failed call is kept
under the unit's key and asked again."""

from __future__ import annotations

from promptgen.context import Context
from promptgen.llm import LLM
from promptgen.stages import intent
from tests.fakellm import FakeLLM
from tests.pipeline_fake import PipelineResponder
from tests.stagekit import config, prompt, schema_names, stage

ANSWER = "Transforms the given input into the requested output."


def test_intent_is_written_once(fake: FakeLLM, llm: LLM) -> None:
    ctx = Context.new(prompt())
    cfg = config(ctx, llm)
    stage("intent", ctx, cfg, llm)
    assert ctx.intent == ANSWER
    assert schema_names(fake) == ["IntentAnswer"]
    assert fake.requests[0]["model"] == "default"  # the rules alias
    assert ctx.stage("intent").status == "done" and ctx.stage("intent").failures == {}
    assert intent.todo(ctx, cfg) == []
    fake.reset()
    stage("intent", ctx, cfg, llm)
    assert fake.requests == []


def test_given_intent_makes_no_call(fake: FakeLLM, llm: LLM) -> None:
    ctx = Context.new(prompt(), intent="Labels reviews.")
    stage("intent", ctx, config(ctx, llm), llm)
    assert ctx.intent == "Labels reviews." and fake.requests == []


def test_failed_call_is_kept_and_asked_again(
    fake: FakeLLM, llm: LLM, responder: PipelineResponder
) -> None:
    responder.fail_stage = "IntentAnswer"
    ctx = Context.new(prompt())
    cfg = config(ctx, llm)
    stage("intent", ctx, cfg, llm)
    record = ctx.stage("intent")
    assert ctx.intent is None
    assert list(record.failures) == ["intent"]
    assert record.failures["intent"].endswith("(HTTP 500, 2 attempt(s))")
    assert record.status == "failed" and record.error == record.failures["intent"]
    assert [i.key for i in intent.todo(ctx, cfg)] == ["intent"]

    responder.fail_stage = None
    fake.reset()
    stage("intent", ctx, cfg, llm)
    assert schema_names(fake) == ["IntentAnswer"]
    assert ctx.intent == ANSWER
    assert record.status == "done" and record.failures == {} and record.error is None


def test_an_answer_copying_the_example_is_asked_again_without_it(
    fake: FakeLLM, llm: LLM, responder: PipelineResponder
) -> None:
    responder.copy_intent_example = True
    ctx = Context.new(prompt())
    stage("intent", ctx, config(ctx, llm), llm)
    assert ctx.intent == ANSWER
    first, second = ("\n".join(m["content"] for m in r["messages"]) for r in fake.requests)
    assert f'for example "{intent.example()}"' in first
    assert "for example" not in second and "news article" not in second
    assert ctx.stage("intent").counts == {"example_copied": 1}


def test_what_copies_the_example() -> None:
    shown = intent.example()
    assert " ".join(shown.split()) == (
        "Summarises a news article in three bullet points for a general reader."
    )
    assert intent.copies_example(shown, shown)
    assert intent.copies_example("Summarizes a news article into three bullet points.", shown)
    # Intents the 1.5B model wrote for the samples: none is a copy.
    for own in (
        "Summarises a git diff in one commit message following the Conventional Commits style.",
        "Summarizes the text in at most three sentences of plain language for a reader.",
        "Generates a haiku about the user's input, following the 5-7-5 pattern.",
    ):
        assert not intent.copies_example(own, shown)
