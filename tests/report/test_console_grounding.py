"""The summary counts only what was checked: ungrounded rules among rules that were
checked, invalid tests among tests that were; a count of tests written for rules and
behaviours says when none of their inputs was checked."""

from __future__ import annotations

from promptgen.context import Context
from promptgen.model import PromptUnderTest
from promptgen.report.console import grounding, invalid_line
from promptgen.report.coverage import behaviour_line, summary_line
from promptgen.results import Behaviour, Rule, Test
from promptgen.stages.tests import STEP


def context(*grounded: bool | None) -> Context:
    ctx = Context.new(PromptUnderTest(name="p", messages=[]))
    ctx.rules = [
        Rule(id=f"rule-{i}", text=f"Rule {i}.", grounded=g) for i, g in enumerate(grounded)
    ]
    return ctx


def test_rules_never_checked_are_not_counted_as_grounded() -> None:
    assert grounding(context(None, None, None)) == "grounding not checked"  # was "0 ungrounded"


def test_checked_rules_are_counted() -> None:
    assert grounding(context(True, False, True)) == "1 ungrounded"
    assert grounding(context(True, False, None)) == "1 ungrounded, 1 not checked"


def test_tests_never_checked_are_not_counted_as_valid_or_as_coverage() -> None:
    # As against a model that only follows the schema at --effort min (validity off):
    # word salad written "for" a class and a rule, and nothing checked it.
    ctx = context(None)
    pleased = Behaviour.make("class", "the customer is mostly pleased", expected_class="positive")
    ctx.behaviours = [pleased]
    ctx.tests = [
        Test(id="s", origin="sample", inputs={"review": "Fine."}, valid=True),
        Test(
            id="g",
            origin="generated",
            rule_id="rule-0",
            inputs={"review": "garden amber"},
            behaviours=[pleased.id],
            expected_class="positive",
        ),
    ]
    assert invalid_line(ctx) == (
        "invalid      not checked (--validity checks each input against the input spec)"
    )
    assert summary_line(ctx) == (
        "coverage     every rule and inverse rule has a test (1 of 1); inputs not checked"
    )
    assert behaviour_line(ctx) == (
        "behaviours   1 of 1 with a test written for them (1 of 1 output classes, 1 with the "
        "class expected); inputs not checked"
    )
    stepwise = ctx.model_copy(deep=True)  # written stepwise: each input checked as written
    stepwise.stage("tests").done.append(STEP)
    assert invalid_line(stepwise) == "invalid      0"
    assert summary_line(stepwise).endswith("(1 of 1)")
    ctx.tests[1].valid = False  # checked: counted, and the lines say no more
    assert invalid_line(ctx) == "invalid      1"
    assert summary_line(ctx) == "coverage     every rule and inverse rule has a test (1 of 1)"
    assert behaviour_line(ctx).endswith("1 with the class expected)")
