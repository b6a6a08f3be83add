"""The generated tests in a context, as both ways of writing them use them: whole-prompt
chunks (tests.py) and the stepwise walk (_walk.py). A slot's tests, a new test made and
kept (or dropped as a near-duplicate), and the note on a slot left without one.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from promptgen.context import Context
from promptgen.model import Scenario
from promptgen.prompting.input_checks import InputIndex
from promptgen.prompting.writing import echoes, shared_inputs
from promptgen.results import Behaviour, Rule, Test
from promptgen.stage import Scope, test_key
from promptgen.stages._plan import Slot


def filled(ctx: Context, slot: Slot, scenario: str | None) -> bool:
    """Whether a generated test of the slot's rule (and behaviour) is in `scenario`."""
    return bool(tests_of(ctx, slot, scenario))


def tests_of(ctx: Context, slot: Slot, scenario: str | None) -> list[Test]:
    behaviour = slot.behaviour.id if slot.behaviour else None
    return [
        t
        for t in ctx.tests
        if t.origin == "generated"
        and t.rule_id == slot.rule.id
        and t.scenario == scenario
        and (behaviour in t.behaviours if behaviour else not t.behaviours)
    ]


def carried_rules(ctx: Context) -> set[str] | None:
    """After an edit: the rules (and inverse rules) whose tests were carried over, so
    only the others' tests are written (None: not an edit, or its tests are written
    anew: --regenerate)."""
    edit = ctx.edit
    if edit is None or "tests" in edit.regenerated:
        return None
    return {*edit.rules_kept, *edit.rules_reworded}


def left_empty_before(ctx: Context, slot: Slot, scenario: Scenario | None) -> bool:
    """A slot of a kept rule that the previous version could not fill (its note says
    why): an edit does not ask for it again."""
    kept = carried_rules(ctx)
    notes = ctx.stage("tests").notes
    return kept is not None and slot.rule.id in kept and note_key(slot, scenario) in notes


def note_key(slot: Slot, scenario: Scenario | None) -> str:
    """Where the tests stage records why a slot has no test: the behaviour's id, or the
    rule's (with the scenario where there are scenarios)."""
    key = slot.behaviour.id if slot.behaviour else slot.rule.id
    return f"{key}|{scenario.name}" if scenario else key


def count_empty(scope: Scope) -> None:
    """The stage's `slots_empty`: how many slots carry a note saying why they have no
    test (absent when none does)."""
    record = scope.ctx.stage("tests")
    if record.notes:
        record.counts["slots_empty"] = len(record.notes)
    else:
        record.counts.pop("slots_empty", None)


def keep(scope: Scope, new: list[Test]) -> None:
    """Add the tests whose input is new: neither the same as nor a near-duplicate of a
    test of its scenario (or an author's sample), the values an author's sample gives
    every test alike set aside (`shared_inputs`: one article, many questions).

    Chunks run side by side: when two of their tests have one input (or nearly), the one
    that sorts first (`test_key`) is kept whichever call returned first, so the test set
    does not depend on completion order. A test an edit kept is never given up for a
    new one."""
    ctx = scope.ctx
    rank = test_key(ctx)
    shared = shared_inputs(ctx.prompt)
    carried = set(ctx.edit.tests_kept) if ctx.edit is not None else set()
    indexes: dict[str | None, tuple[InputIndex, list[int]]] = {}

    def index_of(scenario: str | None) -> tuple[InputIndex, list[int]]:
        if scenario not in indexes:
            index, where = InputIndex(shared=shared), []
            for i, t in enumerate(ctx.tests):
                if t.scenario == scenario or t.origin == "sample":
                    index.add(t.inputs)
                    where.append(i)
            indexes[scenario] = (index, where)
        return indexes[scenario]

    for test in new:
        index, where = index_of(test.scenario)
        found = index.find(test.inputs)
        if found is not None:
            scope.count("duplicates_dropped")
            other = where[found]
            mine = ctx.tests[other]  # an author's row or a test kept by an edit stays
            if mine.origin != "sample" and mine.id not in carried and rank(test) < rank(mine):
                ctx.tests[other] = test  # it takes the place of the one it sorts before
                index.add(test.inputs)
                where.append(other)
            continue
        index.add(test.inputs)
        where.append(len(ctx.tests))
        ctx.tests.append(test)


def others_of(ctx: Context, scenario: str | None) -> list[dict[str, Any]]:
    """Inputs a new test of `scenario` must not repeat: its tests' and the samples'."""
    return [t.inputs for t in ctx.tests if t.scenario == scenario or t.origin == "sample"]


def make_test(
    rule: Rule,
    behaviour: Behaviour | None,
    scenario: str | None,
    inputs: dict[str, Any],
    written_expected: str | None,
    reasoning: str | None,
    generation: int,
) -> Test:
    """A generated test. Its expected output is the one the prompt dictates for the
    behaviour, else the writer's when it neither echoes the input nor talks about the
    output (never on an inverse test, whose case tempts a mistake)."""
    expected = behaviour.expected_output if behaviour else None
    if expected is None and written_expected and not echoes(written_expected, inputs):
        expected = written_expected
    return Test(
        id=Test.make_id("generated", rule.id, scenario, inputs),
        rule_id=rule.id,
        inverse=rule.inverse,  # from the rule itself, never from a position
        scenario=scenario,
        inputs=inputs,
        expected_output=expected,
        expected_class=behaviour.expected_class if behaviour else None,
        behaviours=[behaviour.id] if behaviour else [],
        reasoning=reasoning,
        generation=generation,
        origin="generated",
    )


def behaviour_counts(ctx: Context) -> Counter[str]:
    """Behaviour id -> tests exercising it."""
    return Counter(b for t in ctx.tests for b in t.behaviours)
