"""The compile_rules stage in process: each output rule's proposed check is parsed by the
check parser, compared with the compliance judge on the rule's judged runs, kept or
dropped with its figures; a kept check scores every run at no cost, and with
--judge-only-when-unsure it stands in for the judge on later runs of its rule."""

from __future__ import annotations

import pytest

from promptgen.context import Context
from promptgen.errors import BadInputError
from promptgen.evaluation.compiled import compile_proposal, metric_name
from promptgen.llm import LLM
from promptgen.results import MetricSummary, Rule, Test, TestRun
from promptgen.stages import compile_rules, metrics
from tests.compile_fake import HELLO, POLITE, SHORT_WORDS, TWO_SENTENCES, CompilingResponder
from tests.fakellm import FakeLLM
from tests.stagekit import config, prompt, schema_names, stage

A = "openai/model-a"
# Outputs of model A, four per rule: the judge finds those of three or more sentences
# non-compliant, whatever rule their test targets.
OUTPUTS = {
    TWO_SENTENCES: ["One. Two.", "One. Two. Three.", "Short.", "A. B. C. D."],
    HELLO: ["Hello there.", "Hi there.", "Hello again.", "Hey."],
    POLITE: ["Please.", "Thanks.", "Sure.", "Fine."],
    SHORT_WORDS: ["Yes.", "No.", "Maybe.", "Ok."],
}


@pytest.fixture
def responder() -> CompilingResponder:
    return CompilingResponder()


def judged_context() -> Context:
    """Four rules (the first with an inverse rule), four tests per rule (the first
    rule's fourth test targets its inverse), one run of model A on each."""
    ctx = Context.new(prompt(), intent="Labels the sentiment of a review.")
    ctx.rules = [Rule.make(text) for text in OUTPUTS]
    inverse = Rule.make("The answer is longer than 2 sentences.", inverse_of=ctx.rules[0].id)
    ctx.inverse_rules = [inverse]
    for rule, outputs in zip(ctx.rules, OUTPUTS.values(), strict=True):
        for k, output in enumerate(outputs):
            target = inverse if rule is ctx.rules[0] and k == 3 else rule
            inputs = {"review": f"{rule.text} #{k}"}
            test = Test(
                id=Test.make_id("generated", target.id, None, inputs),
                rule_id=target.id,
                inverse=target.inverse,
                inputs=inputs,
            )
            ctx.tests.append(test)
            ctx.test_runs.append(TestRun(test_id=test.id, model=A, output=output))
    return ctx


def test_proposals_are_kept_or_dropped_by_their_agreement(fake: FakeLLM, llm: LLM) -> None:
    ctx = judged_context()
    cfg = config(ctx, llm, models={"models": [A]}, evaluation={"compile_rules": True})
    stage("metrics", ctx, cfg, llm)
    assert schema_names(fake) == ["ComplianceVerdict"] * 16
    fake.reset()
    stage("compile_rules", ctx, cfg, llm)
    assert schema_names(fake) == ["RuleCheckProposal"] * 4
    two, hello, polite, short = ctx.compiled_rules
    assert (two.check, two.status, two.compared, two.agreed) == (
        {"sentence-count": {"max": 2}}, "kept", 4, 4,
    )  # fmt: skip
    assert (hello.check, hello.status, hello.compared, hello.agreed) == (
        {"starts-with": "Hello"}, "disagrees", 4, 2,
    )  # fmt: skip
    assert hello.agreement == 0.5
    assert (polite.check, polite.status, polite.proposed) == (None, "invalid", "regex=([a-z")
    assert "does not compile" in polite.reason
    assert (short.check, short.status, short.reason) == (None, "none", "a matter of judgement")
    assert ctx.stage("compile_rules").counts == {
        "kept": 1, "disagrees": 1, "too-few-runs": 0, "invalid": 1, "none": 1,
    }  # fmt: skip

    # The kept check scored every run at once, as an ordinary check metric.
    name = metric_name(ctx.rules[0].id)
    assert two.name == name and name == "rule:" + ctx.rules[0].id[5:13]
    checked = [r for r in ctx.metric_results if r.metric == name]
    assert len(checked) == 16 and all(r.judge is None for r in checked)
    failing = sorted(r.test_id for r in checked if r.outcome == "err")
    long_runs = sorted(r.test_id for r in ctx.test_runs if r.output.count(".") > 2)
    assert failing == long_runs and len(failing) == 2
    assert ctx.test_runs[1].metrics[name] == MetricSummary(
        score=0.0, outcome="err", judges=1, errors=0
    )
    assert [m.kind for m in ctx.metrics if m.name == name] == ["check"]
    assert metrics.todo(ctx, cfg) == [] and compile_rules.todo(ctx, cfg) == []

    fake.reset()  # a re-run asks nothing again
    stage("compile_rules", ctx, cfg, llm)
    assert fake.requests == []


def test_a_failed_proposal_is_recorded_and_only_it_is_asked_again(
    fake: FakeLLM, llm: LLM, responder: CompilingResponder
) -> None:
    ctx = judged_context()
    cfg = config(ctx, llm, models={"models": [A]}, evaluation={"compile_rules": True})
    stage("metrics", ctx, cfg, llm)
    responder.fail_rule = HELLO
    stage("compile_rules", ctx, cfg, llm)
    hello = ctx.rules[1]
    record = ctx.stage("compile_rules")
    assert record.status == "failed" and list(record.failures) == [f"propose|{hello.id}"]
    assert [c.rule_id for c in ctx.compiled_rules] == [ctx.rules[i].id for i in (0, 2, 3)]
    assert [i.key for i in compile_rules.todo(ctx, cfg)] == [f"propose|{hello.id}"]

    responder.fail_rule = None
    fake.reset()
    stage("compile_rules", ctx, cfg, llm)
    assert schema_names(fake) == ["RuleCheckProposal"]
    assert [c.rule_id for c in ctx.compiled_rules] == [r.id for r in ctx.rules]
    assert record.status == "done" and record.failures == {}


def test_too_few_judged_runs_keep_nothing_until_more_exist(fake: FakeLLM, llm: LLM) -> None:
    ctx = judged_context()
    first_two = {t.id for t in ctx.tests[:2]}
    ctx.test_runs = [r for r in ctx.test_runs if r.test_id in first_two]
    cfg = config(ctx, llm, models={"models": [A]}, evaluation={"compile_rules": True})
    stage("metrics", ctx, cfg, llm)
    stage("compile_rules", ctx, cfg, llm)
    two = ctx.compiled_rules[0]
    assert (two.status, two.compared, two.agreed) == ("too-few-runs", 2, 2)
    assert not [r for r in ctx.metric_results if r.metric == two.name]

    # Two more judged runs: validated again without a call, and now kept.
    ctx.test_runs += [TestRun(test_id=t.id, model=A, output="One.") for t in ctx.tests[2:4]]
    assert compile_rules.todo(ctx, cfg) == []  # not judged yet
    stage("metrics", ctx, cfg, llm)
    assert [(i.key, i.calls) for i in compile_rules.todo(ctx, cfg)] == [
        (f"validate|{ctx.rules[0].id}", 0)
    ]
    fake.reset()
    stage("compile_rules", ctx, cfg, llm)
    assert schema_names(fake) == []
    assert (two.status, two.compared, two.agreed) == ("kept", 4, 4)
    assert len([r for r in ctx.metric_results if r.metric == two.name]) == 4


def test_judge_only_when_unsure_lets_the_check_stand_in(fake: FakeLLM, llm: LLM) -> None:
    ctx = judged_context()
    cfg = config(ctx, llm, models={"models": [A]}, evaluation={"compile_rules": True})
    stage("metrics", ctx, cfg, llm)
    stage("compile_rules", ctx, cfg, llm)
    two = ctx.compiled_rules[0]
    assert two.sure  # agreed on 4 of 4

    more = {"runs_per_test": 2, "judge_only_when_unsure": True}
    sure = config(ctx, llm, models={"models": [A]}, evaluation=more)
    fake.reset()
    stage("runs", ctx, sure, llm)
    names = schema_names(fake)
    # 16 new cells; the 4 of the first rule's tests (one targets its inverse) are not judged
    assert names.count("text") == 16 and names.count("ComplianceVerdict") == 12
    assert ctx.judge_calls_saved == 4
    stand_ins = [r for r in ctx.metric_results if r.judge == two.name]
    assert len(stand_ins) == 4 and {r.metric for r in stand_ins} == {"compliance"}
    assert all(r.run_index == 1 and r.outcome == "ok" for r in stand_ins)
    assert all(r.reason.startswith(f"stand-in for the judge: {two.name} agreed on 4 of 4")
               for r in stand_ins)  # fmt: skip
    assert metrics.todo(ctx, sure) == [] and compile_rules.todo(ctx, sure) != []

    fake.reset()  # the hello rule has 4 more judged runs: validated again, no call
    stage("compile_rules", ctx, sure, llm)
    stage("metrics", ctx, sure, llm)
    assert fake.requests == [] and ctx.judge_calls_saved == 4
    assert (ctx.compiled_rules[1].compared, ctx.compiled_rules[1].agreed) == (8, 2)
    assert (two.compared, two.agreed) == (4, 4)  # stand-ins are not the judge


def test_without_the_flag_the_judge_is_asked(fake: FakeLLM, llm: LLM) -> None:
    ctx = judged_context()
    cfg = config(ctx, llm, models={"models": [A]}, evaluation={"compile_rules": True})
    stage("metrics", ctx, cfg, llm)
    stage("compile_rules", ctx, cfg, llm)
    more = config(ctx, llm, models={"models": [A]}, evaluation={"compile_rules": True,
                                                               "runs_per_test": 2})  # fmt: skip
    fake.reset()
    stage("runs", ctx, more, llm)
    assert schema_names(fake).count("ComplianceVerdict") == 16
    assert ctx.judge_calls_saved == 0
    name = ctx.compiled_rules[0].name
    assert len([r for r in ctx.metric_results if r.metric == name]) == 32


def test_a_proposal_is_parsed_as_a_check_option_is() -> None:
    assert compile_proposal("sentence-count", "{max: 3}") == {"sentence-count": {"max": 3}}
    assert compile_proposal("word-count", "12") == {"word-count": 12}
    assert compile_proposal("is-json", "") == {"is-json": {}}
    assert compile_proposal("not-icontains", "as an AI") == {"not-icontains": "as an AI"}
    with pytest.raises(BadInputError, match="needs min, max or equals"):
        compile_proposal("sentence-count", "{}")
    with pytest.raises(BadInputError, match="paragraph-count needs whole numbers"):
        compile_proposal("paragraph-count", "blue blue lucid")
    with pytest.raises(BadInputError, match="does not compile"):
        compile_proposal("not-regex", "(a")
