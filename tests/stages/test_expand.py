"""The expansion stage in process: each round makes a generated test harder, chained by
`parent_id`; done keys are `<test id>:<round>`; a failed round is asked again."""

from __future__ import annotations

from promptgen.llm import LLM
from promptgen.stages import expand
from tests.fakellm import FakeLLM
from tests.pipeline_fake import PipelineResponder
from tests.stagekit import config, context, schema_names, stage


def test_two_rounds_build_chains_two_deep(fake: FakeLLM, llm: LLM) -> None:
    ctx = context(rules=1, tests=2)  # one test of the rule, one of its inverse
    roots = list(ctx.tests)
    cfg = config(ctx, llm, generation={"test_expansions": 2})
    stage("expand", ctx, cfg, llm)
    assert schema_names(fake) == ["TestCase"] * 4
    assert len(ctx.tests) == 6
    done = []
    for root in roots:
        (child,) = [t for t in ctx.tests if t.parent_id == root.id]
        (grandchild,) = [t for t in ctx.tests if t.parent_id == child.id]
        assert not [t for t in ctx.tests if t.parent_id == grandchild.id]
        for test in (child, grandchild):
            assert test.origin == "expanded"
            assert (test.rule_id, test.inverse) == (root.rule_id, root.inverse)
            assert test.original_inputs == root.inputs
            assert test.inputs != root.inputs
            assert test.expected_output and test.expected_output.startswith("re-derived for")
        done += [f"{root.id}:1", f"{child.id}:2"]
    record = ctx.stage("expand")
    assert sorted(record.done) == sorted(done)
    assert record.counts == {"expanded": 4} and record.status == "done"
    assert expand.todo(ctx, cfg) == []
    fake.reset()
    stage("expand", ctx, cfg, llm)
    assert fake.requests == []


def test_only_generated_tests_are_expanded(fake: FakeLLM, llm: LLM) -> None:
    ctx = context(rules=1, tests=2)
    generated, sample = ctx.tests
    sample.origin = "sample"
    stage("expand", ctx, config(ctx, llm, generation={"test_expansions": 1}), llm)
    assert schema_names(fake) == ["TestCase"]
    # Stored in a stable order: samples, generated tests, then expansions.
    assert [(t.origin, t.parent_id) for t in ctx.tests] == [
        ("sample", None),
        ("generated", None),
        ("expanded", generated.id),
    ]


def test_each_failed_round_is_a_failure(
    fake: FakeLLM, llm: LLM, responder: PipelineResponder
) -> None:
    responder.fail_stage = "TestCase"
    ctx = context(rules=1, tests=2)
    cfg = config(ctx, llm, generation={"test_expansions": 1})
    stage("expand", ctx, cfg, llm)
    assert schema_names(fake) == ["TestCase"] * 4  # each round once (and retried once)
    record = ctx.stage("expand")
    assert sorted(record.failures) == sorted(f"{t.id}:1" for t in ctx.tests)
    assert record.status == "failed" and record.done == [] and len(ctx.tests) == 2

    responder.fail_stage = None
    fake.reset()
    stage("expand", ctx, cfg, llm)
    assert schema_names(fake) == ["TestCase"] * 2
    assert len(ctx.tests) == 4 and record.failures == {} and len(record.done) == 2
