"""The test generation stage in process: one call per scenario and chunk of rules, the
chunk's labels as an enum, every test tied to a rule of its chunk; author samples become
tests without a call; each failed chunk is a failure of its own."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from promptgen.llm import LLM
from promptgen.model import PromptInput
from promptgen.model import TestSample as Sample
from promptgen.results import Behaviour, Test
from promptgen.stage import sort_tests
from promptgen.stages import tests
from tests.fakellm import FakeLLM
from tests.pipeline_fake import PipelineResponder, distinct_words
from tests.stagekit import FailWhen, config, context, schema_names, stage, texts

# The fake writes inputs "review value <call>-<label>-<k> <four words>" for the k-th
# test of a label.
INPUT = re.compile(r"review value (\d+)-([RI]\d)-(\d) [a-z ]+")


def answer_schemas(fake: FakeLLM) -> list[dict[str, Any]]:
    return [b["response_format"]["json_schema"]["schema"] for b in fake.requests]


def labels(schema: dict[str, Any]) -> list[str]:
    """The rule labels an answer must fill: each a required property."""
    assert schema["required"] == list(schema["properties"])
    return list(schema["properties"])


def per_label(schema: dict[str, Any]) -> int:
    """How many numbered cases each label holds (required properties "1" .. "N")."""
    numbered = schema["$defs"]["Cases"]
    assert numbered["required"] == [str(k) for k in range(1, len(numbered["properties"]) + 1)]
    return len(numbered["properties"])


def label_of(test: Test) -> str:
    match = INPUT.fullmatch(test.inputs["review"])
    assert match is not None, test.inputs
    return match.group(2)


def test_rules_and_inverses_in_separate_chunks(fake: FakeLLM, llm: LLM) -> None:
    ctx = context(rules=2)
    cfg = config(ctx, llm)
    stage("tests", ctx, cfg, llm)
    schemas = answer_schemas(fake)
    assert sorted(labels(s) for s in schemas) == [["I1", "I2"], ["R1", "R2"]]
    assert [per_label(s) for s in schemas] == [2, 2]
    (r1, r2), (i1, i2) = ctx.rules, ctx.inverse_rules
    sent = texts(fake, "TestCases")
    plain = "   case 1: inputs where following this rule matters\n" + (
        "   case 2: inputs where following this rule matters\n"
    )
    tempt = "   case 1: inputs that tempt a model into this mistake\n" + (
        "   case 2: inputs that tempt a model into this mistake\n"
    )
    assert sum(f"R1. {r1.text}\n{plain}R2. {r2.text}\n{plain}" in t for t in sent) == 1
    assert sum(f"I1. {i1.text}\n{tempt}I2. {i2.text}\n{tempt}" in t for t in sent) == 1
    # Two tests per label, each tied to the rule its label stands for in its chunk.
    by_label = {"R1": r1, "R2": r2, "I1": i1, "I2": i2}
    assert Counter(label_of(t) for t in ctx.tests) == dict.fromkeys(by_label, 2)
    for test in ctx.tests:
        rule = by_label[label_of(test)]
        assert (test.rule_id, test.inverse, test.origin) == (rule.id, rule.inverse, "generated")
        assert test.id == Test.make_id("generated", rule.id, None, test.inputs)
        k = INPUT.fullmatch(test.inputs["review"]).group(3)  # type: ignore[union-attr]
        assert test.expected_output == f"expected for {label_of(test)} #{k}"
    record = ctx.stage("tests")
    assert record.status == "done" and record.failures == {}
    assert sorted(record.done) == sorted(["samples", *(c.key for c in tests.plan_chunks(ctx, cfg))])
    assert tests.todo(ctx, cfg) == []
    fake.reset()
    stage("tests", ctx, cfg, llm)
    assert fake.requests == []


def test_one_rule_per_chunk_is_one_label(fake: FakeLLM, llm: LLM) -> None:
    ctx = context(rules=2)
    gen = {"max_rules_per_test_generation": 1, "tests_per_rule": 1}
    stage("tests", ctx, config(ctx, llm, generation=gen), llm)
    assert sorted(labels(s) for s in answer_schemas(fake)) == [["I1"], ["I1"], ["R1"], ["R1"]]
    assert {per_label(s) for s in answer_schemas(fake)} == {1}
    assert sorted(t.rule_id or "" for t in ctx.tests) == sorted(r.id for r in ctx.all_rules)


def test_unsplit_rules_share_one_call(fake: FakeLLM, llm: LLM) -> None:
    ctx = context(rules=2)
    stage("tests", ctx, config(ctx, llm, generation={"split_rules": False}), llm)
    (schema,) = answer_schemas(fake)
    assert labels(schema) == ["R1", "R2", "I1", "I2"]
    assert len(ctx.tests) == 8
    assert sum(t.inverse for t in ctx.tests) == 4


def test_test_generations_multiply_the_cases_of_a_rule(fake: FakeLLM, llm: LLM) -> None:
    ctx = context(rules=1)
    gen = {"split_rules": False, "test_generations": 2}
    stage("tests", ctx, config(ctx, llm, generation=gen), llm)
    (schema,) = answer_schemas(fake)  # one call: the chunk's every slot
    assert per_label(schema) == 4  # testsPerRule 2 x testGenerations 2
    assert Counter(t.rule_id for t in ctx.tests) == {r.id: 4 for r in ctx.all_rules}


def test_each_case_is_written_for_its_behaviour(fake: FakeLLM, llm: LLM) -> None:
    ctx = context(rules=1)
    ctx.rules[0] = ctx.rules[0].model_copy(update={"source": "Answer with one word."})
    source = "Answer with one word."
    unhappy = Behaviour.make(
        "class", "the customer is mostly unhappy", source=source, expected_class="negative",
        expected_output="negative",
    )  # fmt: skip
    pleased = Behaviour.make("class", "the customer is mostly pleased", source=source,
                             expected_class="positive")  # fmt: skip
    ctx.behaviours = [unhappy, pleased]
    stage("tests", ctx, config(ctx, llm, generation={"split_rules": False}), llm)
    (text,) = texts(fake, "TestCases")
    assert (
        f"R1. {ctx.rules[0].text}\n"
        "   case 1: inputs in which the customer is mostly unhappy "
        '(a correct output gives "negative")\n'
        "   case 2: inputs in which the customer is mostly pleased "
        '(a correct output gives "positive")\n'
    ) in text
    by_case = {t.behaviours[0]: t for t in ctx.tests if t.behaviours}
    # the output the prompt dictates, not the writer's; else the writer's
    assert by_case[unhappy.id].expected_output == "negative"
    assert by_case[pleased.id].expected_output == "expected for R1 #1"
    assert by_case[pleased.id].expected_class == "positive"
    assert "{{" not in text  # the prompt is shown with its slots in brackets
    assert "[review]" in text


def test_an_input_seen_before_is_dropped(fake: FakeLLM, llm: LLM) -> None:
    ctx = context(rules=1)
    words = distinct_words(1, "R1", 0, "review")
    old = Test(id="test-old", inputs={"review": f"Review value 1 R1 0 {words}!"}, origin="sample")
    ctx.tests.append(old)
    stage("tests", ctx, config(ctx, llm, generation={"split_rules": False}), llm)
    assert [t.inputs for t in ctx.tests].count(old.inputs) == 1
    # R1's first test said the sample again in other case and punctuation: one top-up
    # call asks for R1's empty slot again.
    assert len(ctx.tests) == 1 + 4
    assert ctx.stage("tests").counts == {"invalid_dropped": 1, "dropped_near_duplicate": 1}
    *_, top_up = answer_schemas(fake)
    assert labels(top_up) == ["R1"]
    assert Counter(t.rule_id for t in ctx.tests if t.origin == "generated") == {
        r.id: 2 for r in ctx.all_rules
    }


def test_author_samples_become_tests_without_a_call(fake: FakeLLM, llm: LLM) -> None:
    ctx = context(rules=0)
    ctx.prompt.test_samples = [
        Sample(inputs={"review": "Great!"}, expected="positive"),
        Sample(inputs={"review": "Bad."}, expected={"label": "negative"}),
        Sample(inputs={"review": "Great!"}, expected="positive"),  # the same input
    ]
    cfg = config(ctx, llm)
    stage("tests", ctx, cfg, llm)
    assert fake.requests == []
    assert [(t.inputs, t.expected_output, t.origin, t.valid) for t in ctx.tests] == [
        ({"review": "Great!"}, "positive", "sample", True),
        ({"review": "Bad."}, '{"label": "negative"}', "sample", True),
    ]
    assert ctx.tests[0].id == Test.make_id("sample", None, None, {"review": "Great!"})
    assert ctx.tests[0].validity_reason == "supplied by the prompt's author"
    assert ctx.stage("tests").done == ["samples"] and tests.todo(ctx, cfg) == []
    stage("tests", ctx, cfg, llm)
    assert len(ctx.tests) == 2


def test_each_failed_chunk_is_a_failure(
    fake: FakeLLM, llm: LLM, responder: PipelineResponder
) -> None:
    responder.fail_stage = "TestCases"
    ctx = context(rules=2, scenarios=2)
    cfg = config(ctx, llm)
    stage("tests", ctx, cfg, llm)
    record = ctx.stage("tests")
    chunks = [c.key for c in tests.plan_chunks(ctx, cfg)]
    assert len(set(chunks)) == 4
    assert sorted(record.failures) == sorted(chunks)
    assert sorted(k.split("|")[0] for k in record.failures) == ["s0", "s0", "s1", "s1"]
    assert record.status == "failed" and record.error and record.error.startswith("4 units")
    assert record.done == ["samples"] and ctx.tests == []

    responder.fail_stage = None
    fake.reset()
    stage("tests", ctx, cfg, llm)
    assert schema_names(fake) == ["TestCases"] * 4
    assert Counter(t.scenario for t in ctx.tests) == {"s0": 8, "s1": 8}
    assert record.status == "done" and record.failures == {}


def test_a_rerun_asks_only_the_scenario_that_failed(fake: FakeLLM, llm: LLM) -> None:
    fake.responder = FailWhen("Scenario for these tests: s1")
    ctx = context(rules=2, scenarios=2)
    cfg = config(ctx, llm, generation={"split_rules": False})
    stage("tests", ctx, cfg, llm)
    (failed,) = ctx.stage("tests").failures
    assert failed.startswith("s1|")
    assert {t.scenario for t in ctx.tests} == {"s0"}

    fake.responder = PipelineResponder()
    fake.reset()
    stage("tests", ctx, cfg, llm)
    (text,) = texts(fake, "TestCases")
    assert "Scenario for these tests: s1: case 1" in text
    assert Counter(t.scenario for t in ctx.tests) == {"s0": 8, "s1": 8}


class Stubborn(PipelineResponder):
    """Writes no test for the first rule's label (R1), ever."""

    def answer(self, name: str, schema: dict[str, Any], text: str, n: int) -> Any:
        answer = super().answer(name, schema, text, n)
        if name == "TestCases":
            answer.pop("R1", None)  # as if the model skipped it (a sloppy, non-strict one)
        return answer


def test_a_rule_still_short_after_one_top_up_has_a_recorded_reason(fake: FakeLLM, llm: LLM) -> None:
    fake.responder = Stubborn()
    ctx = context(rules=2)
    cfg = config(ctx, llm, generation={"split_rules": False})
    stage("tests", ctx, cfg, llm)
    # The chunk, then exactly one top-up call asking for R1 (rule 1) alone.
    schemas = answer_schemas(fake)
    assert [labels(s) for s in schemas] == [["R1", "R2", "I1", "I2"], ["R1"]]
    assert per_label(schemas[1]) == 2
    record = ctx.stage("tests")
    # R1 got none of 2 cases, twice: 4 cases missing.
    assert record.status == "done" and record.counts == {"cases_missing": 4, "slots_empty": 1}
    short = ctx.rules[0]
    assert record.notes == {short.id: "no test with a valid new input after a top-up round"}
    assert tests.todo(ctx, cfg) == []  # bounded: no second top-up
    fake.reset()
    stage("tests", ctx, cfg, llm)
    assert fake.requests == []


class OneBadCase(PipelineResponder):
    """The first case of the first answer is malformed (its inputs are missing)."""

    def answer(self, name: str, schema: dict[str, Any], text: str, n: int) -> Any:
        answer = super().answer(name, schema, text, n)
        if name == "TestCases" and n == 1:
            del answer["R1"]["1"]["inputs"]
        return answer


def test_a_malformed_case_is_dropped_not_the_batch(fake: FakeLLM, llm: LLM) -> None:
    fake.responder = OneBadCase()
    ctx = context(rules=1)
    stage("tests", ctx, config(ctx, llm, generation={"split_rules": False}), llm)
    record = ctx.stage("tests")
    assert record.status == "done"
    assert record.counts == {"cases_missing": 1}
    # R1 lost one test to the bad case; the top-up asked for R1 alone and got it back.
    assert [labels(s) for s in answer_schemas(fake)] == [["R1", "I1"], ["R1"]]
    assert Counter(t.rule_id for t in ctx.tests) == {r.id: 2 for r in ctx.all_rules}


def test_inputs_are_typed_like_their_declaration_and_sample(fake: FakeLLM, llm: LLM) -> None:
    ctx = context(rules=1)
    ctx.prompt.inputs = {
        "tone": PromptInput(name="tone", enum=["formal", "friendly"]),
        "changes": PromptInput(
            name="changes", type="array", sample=[{"title": "t", "kind": "fix"}]
        ),
        "breaking": PromptInput(name="breaking", type="boolean", default=False),
        "limit": PromptInput(name="limit", type="integer"),
    }
    stage("tests", ctx, config(ctx, llm, generation={"split_rules": False}), llm)
    props = answer_schemas(fake)[0]["$defs"]["Inputs"]["properties"]
    shown = {k: v["anyOf"][0] for k, v in props.items()}
    assert shown["tone"] == {"enum": ["formal", "friendly"], "type": "string"}
    assert shown["changes"]["type"] == "array" and shown["breaking"] == {"type": "boolean"}
    assert shown["limit"] == {"type": "integer"}
    item = answer_schemas(fake)[0]["$defs"]["Item"]
    assert item["required"] == ["kind", "title"] and item["additionalProperties"] is False
    first = ctx.tests[0].inputs
    assert first["tone"] in ("formal", "friendly") and isinstance(first["breaking"], bool)
    assert isinstance(first["changes"][0]["title"], str) and isinstance(first["limit"], int)


def test_tests_are_stored_in_a_stable_order(fake: FakeLLM, llm: LLM) -> None:
    """Whichever chunk returns first, the stored order is the same: by rule, then by
    the order of the one call that wrote them."""
    ctx = context(rules=3, scenarios=2)
    stage("tests", ctx, config(ctx, llm, generation={"max_rules_per_test_generation": 1}), llm)
    order = [(t.scenario, t.rule_id) for t in ctx.tests]
    positions = {r.id: i for i, r in enumerate(ctx.all_rules)}
    assert order == sorted(order, key=lambda o: (o[0], positions[o[1]]))
    shuffled = list(reversed(ctx.tests))
    ctx.tests = shuffled
    sort_tests(ctx)
    assert [(t.scenario, t.rule_id) for t in ctx.tests] == order
