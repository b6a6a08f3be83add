"""Multi-step and multi-run prompts (LVE) in the runs stage: each step the model writes
is a call on the messages before it, its answer takes the step's place, and the run
records every named answer (`TestRun.steps`); a multi-run prompt calls every variant
`repetitions` times and keeps every answer."""

from __future__ import annotations

from typing import Any

from promptgen.context import Context
from promptgen.llm import LLM
from promptgen.model import Message, PromptInput, PromptUnderTest, PromptVariant
from promptgen.results import Test
from tests.fakellm import FakeLLM, Reply
from tests.stagekit import config, stage

A = "openai/model-a"


def numbered_answers(body: dict[str, Any]) -> Reply:
    """The model under test answers "answer N" (N = how many user messages it saw);
    judges get their pipeline answers from nowhere: these tests switch compliance off."""
    users = [m for m in body["messages"] if m["role"] == "user"]
    return Reply(content=f"answer {len(users)} to {users[-1]['content']}")


def context_of(prompt: PromptUnderTest, inputs: dict[str, Any]) -> Context:
    ctx = Context.new(prompt)
    ctx.tests = [Test(id=Test.make_id("sample", None, None, inputs), inputs=inputs)]
    return ctx


def multi_step(last_fill: bool) -> PromptUnderTest:
    messages = [
        Message(role="system", content="Estimate {{records}}."),
        Message(role="user", content="Record in {year1}?"),
        Message(role="assistant", content="", variable="answer1"),
        Message(role="user", content="Record in {year2}?"),
    ]
    if last_fill:
        messages.append(Message(role="assistant", content="", variable="answer2"))
    return PromptUnderTest(
        name="steps",
        messages=messages,
        inputs={n: PromptInput(name=n) for n in ("year1", "year2")},
        template_engine="format",
    )


def run_one(fake: FakeLLM, llm: LLM, ctx: Context) -> Any:
    fake.responder = numbered_answers
    cfg = config(ctx, llm, models={"models": [A]}, evaluation={"compliance": False})
    stage("runs", ctx, cfg, llm)
    (record,) = ctx.test_runs
    return record


def test_each_step_is_a_call_on_the_messages_before_it(fake: FakeLLM, llm: LLM) -> None:
    ctx = context_of(multi_step(last_fill=True), {"year1": 2030, "year2": 2040})
    record = run_one(fake, llm, ctx)
    first, second = (b["messages"] for b in fake.requests)
    assert [m["role"] for m in first] == ["system", "user"]
    assert first[0]["content"] == "Estimate {records}."  # {{ }} is a literal brace
    assert first[1]["content"] == "Record in 2030?"
    assert [m["role"] for m in second] == ["system", "user", "assistant", "user"]
    assert second[2] == {"role": "assistant", "content": "answer 1 to Record in 2030?"}
    assert record.steps == {
        "answer1": "answer 1 to Record in 2030?",
        "answer2": "answer 2 to Record in 2040?",
    }
    assert record.output == "answer 2 to Record in 2040?"
    assert record.error is None and record.usage.calls == 2


def test_a_prompt_ending_with_a_user_message_names_its_last_answer_response(
    fake: FakeLLM, llm: LLM
) -> None:
    ctx = context_of(multi_step(last_fill=False), {"year1": 1, "year2": 2})
    record = run_one(fake, llm, ctx)
    assert list(record.steps) == ["answer1", "response"]
    assert record.output == record.steps["response"] == "answer 2 to Record in 2?"


def test_a_failed_step_fails_the_run_and_keeps_what_came_before(fake: FakeLLM, llm: LLM) -> None:
    ctx = context_of(multi_step(last_fill=True), {"year1": 1, "year2": 2})
    calls: list[int] = []

    def second_fails(body: dict[str, Any]) -> Reply:
        calls.append(1)
        return Reply(status=400) if len(calls) > 1 else numbered_answers(body)

    cfg = config(ctx, llm, models={"models": [A]}, evaluation={"compliance": False})
    fake.responder = second_fails
    stage("runs", ctx, cfg, llm)
    (record,) = ctx.test_runs
    assert record.error is not None and not record.ok
    assert record.steps == {"answer1": "answer 1 to Record in 1?"}


def test_a_multi_run_prompt_calls_every_variant_its_repetitions(fake: FakeLLM, llm: LLM) -> None:
    variants = [
        PromptVariant(name="a+b", messages=[Message(role="user", content="{a} + {b}")]),
        PromptVariant(
            name="b+a", messages=[Message(role="user", content="{b} + {a}")], repetitions=2
        ),
    ]
    prompt = PromptUnderTest(
        name="sum",
        messages=variants[0].messages,
        variants=variants,
        inputs={n: PromptInput(name=n) for n in "ab"},
        template_engine="format",
    )
    record = run_one(fake, llm, context_of(prompt, {"a": 3, "b": 1}))
    assert [b["messages"][0]["content"] for b in fake.requests] == ["3 + 1", "1 + 3", "1 + 3"]
    assert record.steps == {
        "a+b": "answer 1 to 3 + 1",
        "b+a #1": "answer 1 to 1 + 3",
        "b+a #2": "answer 1 to 1 + 3",
    }
    assert record.output == (
        "### a+b\nanswer 1 to 3 + 1\n\n### b+a #1\nanswer 1 to 1 + 3\n\n"
        "### b+a #2\nanswer 1 to 1 + 3"
    )
    seeds = [b.get("seed") for b in fake.requests]
    assert seeds[1] != seeds[2]  # a repetition is a new call, not a cached copy
