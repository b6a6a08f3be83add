"""The summary's rules line counts ungrounded rules only among rules that were checked."""

from __future__ import annotations

from promptgen.context import Context
from promptgen.model import PromptUnderTest
from promptgen.report.console import grounding
from promptgen.results import Rule


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
