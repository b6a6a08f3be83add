"""The baseline stage in process: per scenario, one call for as many rule-less tests as
test generation writes; each failed scenario is a failure of its own."""

from __future__ import annotations

from collections import Counter

from promptgen.llm import LLM
from promptgen.results import Test
from promptgen.stages import baseline
from tests.fakellm import FakeLLM
from tests.pipeline_fake import PipelineResponder
from tests.stagekit import config, context, schema_names, stage

ON = {"baseline_tests": True}


def test_as_many_baseline_tests_as_generated_ones(fake: FakeLLM, llm: LLM) -> None:
    ctx = context(rules=2)  # 2 rules + 2 inverses, 2 tests each: 8
    cfg = config(ctx, llm, generation=ON)
    stage("baseline", ctx, cfg, llm)
    (body,) = fake.requests
    schema = body["response_format"]["json_schema"]
    assert schema["name"] == "TestCases" and body["max_tokens"] == 400 * 8 + 200
    # Eight numbered cases, each a required property: a strict server writes all eight.
    assert schema["schema"]["required"] == [str(k) for k in range(1, 9)]
    assert [t.inputs["review"].split()[:3] for t in ctx.tests] == [
        ["review", "value", f"1-B-{k}"] for k in range(8)
    ]
    for k, test in enumerate(ctx.tests):
        assert (test.origin, test.rule_id, test.scenario) == ("baseline", None, None)
        assert test.id == Test.make_id("baseline", None, None, test.inputs)
        assert test.expected_output == f"expected for B #{k}"
    assert ctx.stage("baseline").done == ["-"] and ctx.stage("baseline").status == "done"
    assert baseline.todo(ctx, cfg) == []
    fake.reset()
    stage("baseline", ctx, cfg, llm)
    assert fake.requests == []


def test_off_unless_asked(fake: FakeLLM, llm: LLM) -> None:
    ctx = context(rules=2)
    stage("baseline", ctx, config(ctx, llm), llm)
    assert fake.requests == [] and ctx.tests == []


def test_each_failed_scenario_is_a_failure(
    fake: FakeLLM, llm: LLM, responder: PipelineResponder
) -> None:
    responder.fail_stage = "TestCases"
    ctx = context(rules=1, scenarios=2)
    cfg = config(ctx, llm, generation={**ON, "tests_per_rule": 1})
    stage("baseline", ctx, cfg, llm)
    record = ctx.stage("baseline")
    assert sorted(record.failures) == ["s0", "s1"]
    assert record.status == "failed" and record.done == [] and ctx.tests == []

    responder.fail_stage = None
    fake.reset()
    stage("baseline", ctx, cfg, llm)
    assert schema_names(fake) == ["TestCases"] * 2
    assert Counter(t.scenario for t in ctx.tests) == {"s0": 2, "s1": 2}
    assert sorted(record.done) == ["s0", "s1"] and record.failures == {}


def test_each_scenario_gets_its_own_call(fake: FakeLLM, llm: LLM) -> None:
    """Two scenarios that fix no input used to send the same request twice (the second
    a cache hit of the first): each call now names its scenario."""
    ctx = context(rules=1, scenarios=2)
    for scenario in ctx.prompt.scenarios:
        scenario.parameters = {}
    stage("baseline", ctx, config(ctx, llm, generation={**ON, "tests_per_rule": 1}), llm)
    sent = [b["messages"][0]["content"] for b in fake.requests]
    assert len(sent) == 2 and sent[0] != sent[1]
    assert sorted("Scenario for these tests: s0" in t for t in sent) == [False, True]
    assert Counter(t.scenario for t in ctx.tests) == {"s0": 2, "s1": 2}
