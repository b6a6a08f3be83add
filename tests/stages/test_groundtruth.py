"""The groundtruth stage in process: a groundtruth answer per test, scored by the eval
model; accepted at the threshold, else the best of the candidates kept invalid; every
attempt is recorded. The candidates are asked at once (tests/stages/test_groundtruth_at_once.py);
with one call at a time (`--concurrency 1`, the embedded model) one after another, here."""

from __future__ import annotations

from pathlib import Path

from promptgen.context import Context
from promptgen.llm import LLM
from promptgen.model import TestSample as Sample
from promptgen.results import GroundtruthAttempt
from promptgen.selection import sample_tests
from promptgen.stages import groundtruth
from tests.fakellm import FakeLLM
from tests.pipeline_fake import PipelineResponder
from tests.stagekit import config, context, make_llm, schema_names, stage

JUDGE = "openai/judge-model"
ON = {"groundtruth": True}
ONE = {"groundtruth": True, "groundtruth_retries": 0}  # one candidate: nothing to speculate
MODELS = {"models": ["openai/model-a"]}


def attempts(ctx: Context) -> list[tuple[int, float | None, bool]]:
    return [(a.attempt, a.average, a.accepted) for a in ctx.groundtruth]


def answer_text(review: str, k: int = 1) -> str:
    """What the fake's groundtruth model answers: its name, its call number, words seen."""
    words = len(f"Label the review positive or negative.\n{review}".split())
    return f"default answer {k} to {words} words"


def test_an_answer_at_the_threshold_is_accepted(
    fake: FakeLLM, llm: LLM, responder: PipelineResponder
) -> None:
    responder.groundtruth_scores = [80]
    ctx = context(rules=1, tests=1)
    cfg = config(ctx, llm, evaluation=ONE, models=MODELS)
    stage("groundtruth", ctx, cfg, llm)
    assert schema_names(fake) == ["text", "GroundtruthScore"]
    answer, score = fake.requests
    assert answer["model"] == "default" and score["model"] == "judge-model"
    (test,) = ctx.tests
    output = answer_text(test.inputs["review"])
    assert ctx.groundtruth == [
        GroundtruthAttempt(
            test_id=test.id, attempt=0, model="openai/default", output=output,
            scores={JUDGE: 80.0}, reasons={JUDGE: "groundtruth scored 80"}, average=80.0,
            accepted=True,
        )
    ]  # fmt: skip
    assert (test.groundtruth, test.groundtruth_model) == (output, "openai/default")
    assert (test.groundtruth_score, test.groundtruth_status) == (80.0, "ok")
    assert ctx.stage("groundtruth").status == "done"
    assert groundtruth.todo(ctx, cfg) == []
    fake.reset()
    stage("groundtruth", ctx, cfg, llm)
    assert fake.requests == []


def serial(fake: FakeLLM, tmp_path: Path) -> LLM:
    """A gateway that makes one call at a time: candidates are asked one after another."""
    llm = make_llm(fake, tmp_path)
    llm.settings.concurrency = 1
    return llm


def test_a_retry_that_reaches_the_threshold_is_kept(
    fake: FakeLLM, tmp_path: Path, responder: PipelineResponder
) -> None:
    responder.groundtruth_scores = [60, 85]
    ctx = context(rules=1, tests=1)
    llm = serial(fake, tmp_path)
    cfg = config(ctx, llm, evaluation=ON, models=MODELS)
    assert [i.calls for i in groundtruth.todo(ctx, cfg)] == [2]  # the first candidate
    stage("groundtruth", ctx, cfg, llm)
    assert schema_names(fake) == ["text", "GroundtruthScore"] * 2
    assert [b.get("seed") for b in fake.requests if b["model"] == "default"] == [None, 1]
    assert attempts(ctx) == [(0, 60.0, False), (1, 85.0, True)]
    (test,) = ctx.tests
    assert test.groundtruth == answer_text(test.inputs["review"], 2)
    assert (test.groundtruth_score, test.groundtruth_status) == (85.0, "ok")


def test_below_the_threshold_after_retries_is_invalid(
    fake: FakeLLM, tmp_path: Path, responder: PipelineResponder
) -> None:
    responder.groundtruth_scores = [79, 60, 70]
    ctx = context(rules=1, tests=1)
    llm = serial(fake, tmp_path)
    cfg = config(ctx, llm, evaluation={**ON, "groundtruth_retries": 2}, models=MODELS)
    stage("groundtruth", ctx, cfg, llm)
    assert schema_names(fake) == ["text", "GroundtruthScore"] * 3
    assert attempts(ctx) == [(0, 79.0, False), (1, 60.0, False), (2, 70.0, False)]
    (test,) = ctx.tests
    # The best answer is kept, marked invalid.
    assert test.groundtruth == answer_text(test.inputs["review"], 1)
    assert (test.groundtruth_score, test.groundtruth_status) == (79.0, "invalid")
    assert ctx.stage("groundtruth").status == "done"


def test_each_failed_test_is_a_failure(
    fake: FakeLLM, llm: LLM, responder: PipelineResponder
) -> None:
    responder.fail_stage = "GroundtruthScore"
    ctx = context(rules=1, tests=2)
    cfg = config(ctx, llm, evaluation=ONE, models=MODELS)
    stage("groundtruth", ctx, cfg, llm)
    record = ctx.stage("groundtruth")
    assert sorted(record.failures) == sorted(t.id for t in ctx.tests)
    assert set(record.failures.values()) == {"no eval model could score the answer"}
    assert record.status == "failed"
    assert [(a.attempt, a.average, a.scores) for a in ctx.groundtruth] == [(0, None, {})] * 2
    assert all("HTTP 500" in a.reasons[JUDGE] for a in ctx.groundtruth)
    assert all(t.groundtruth_status is None for t in ctx.tests)

    responder.fail_stage = None
    fake.reset()
    stage("groundtruth", ctx, cfg, llm)
    assert sorted(schema_names(fake)) == ["GroundtruthScore"] * 2 + ["text"] * 2
    assert attempts(ctx) == [(0, 90.0, True)] * 2  # the failed attempt is replaced
    assert all(t.groundtruth_status == "ok" for t in ctx.tests)
    assert record.failures == {} and record.status == "done"


def test_off_without_models_under_test(fake: FakeLLM, llm: LLM) -> None:
    ctx = context(rules=1, tests=1)
    stage("groundtruth", ctx, config(ctx, llm, evaluation=ON), llm)
    assert fake.requests == [] and ctx.groundtruth == []


def test_an_author_output_is_the_reference_without_a_call(
    fake: FakeLLM, llm: LLM, responder: PipelineResponder
) -> None:
    """A sample with an expected output is settled as `author` at no cost; a generated
    test's own expected output is no reference: the groundtruth model answers it."""
    ctx = context(rules=1, tests=1)
    ctx.prompt.test_samples = [
        Sample(inputs={"review": "Great value."}, expected="positive"),
        Sample(inputs={"review": "It broke."}),
    ]
    ctx.tests += sample_tests(ctx.prompt)
    generated, given, plain = ctx.tests
    generated.expected_output = "negative"  # the generator's guess
    cfg = config(ctx, llm, evaluation=ONE, models=MODELS)
    calls = {item.key: item.calls for item in groundtruth.todo(ctx, cfg)}
    assert calls == {generated.id: 2, given.id: 0, plain.id: 2}
    stage("groundtruth", ctx, cfg, llm)
    answered = [b for b in fake.requests if b["model"] == "default"]
    assert len(answered) == 2 and not any("Great value." in str(b) for b in answered)
    assert (given.groundtruth, given.groundtruth_status) == ("positive", "author")
    assert (given.groundtruth_model, given.groundtruth_score) == (None, None)
    assert given.has_reference and given.reference == "author"
    assert [generated.groundtruth_status, plain.groundtruth_status] == ["ok", "ok"]
    assert generated.groundtruth != generated.expected_output
    assert generated.reference == "groundtruth:openai/default"
    assert {a.test_id for a in ctx.groundtruth} == {generated.id, plain.id}


def test_a_fixed_input_that_changes_a_sample_drops_its_author_output(
    fake: FakeLLM, llm: LLM, responder: PipelineResponder
) -> None:
    ctx = context(rules=1, tests=0)
    ctx.prompt.test_samples = [Sample(inputs={"review": "Great value."}, expected="positive")]
    ctx.tests += sample_tests(ctx.prompt)
    ctx.prompt.fixed_inputs = {"review": "Awful."}
    stage("groundtruth", ctx, config(ctx, llm, evaluation=ONE, models=MODELS), llm)
    (test,) = ctx.tests
    assert test.groundtruth_status == "ok" and test.groundtruth != "positive"
    (answer,) = [b for b in fake.requests if b["model"] == "default"]
    assert answer["messages"][-1]["content"] == "Awful."
