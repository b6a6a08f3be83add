"""Stepwise tests (small models): the planned slots in turn, one short call per test.

For each slot the writer (`prompts/test_input.prompty`) is asked only for input values
that fit the slot's case: a behaviour ("the customer is mostly unhappy"), or the rule
itself. It is shown the inputs' descriptions, the author's guidance, the form of
non-prose inputs and, for a condition or criterion, the prompt's sentence, never the
prompt's template syntax and never other tests' inputs (a small writer copied both).
Inputs a behaviour fixes (an empty message, a flag) are set, not asked for; a hostile
case's instruction is added to what was written. No expected output is asked: a test
carries the one the prompt dictates for its behaviour, or none.

What was written is kept only when it passes `prompting/input_checks.py` and does not
describe itself ("This is a sample review."); a test written for an output class is kept
only when a check call sorts it into that class, and carries the class as expected only
then (where nothing can sort it: bare labels, a scale's ends, it carries none).
Otherwise the slot is asked again at a higher temperature with another seed, told in a
last sentence what to write instead of what was refused (`prompting/advice.py`), then
once for a list of candidates, of which the first that passes is kept; a slot still
empty gets a recorded reason.

The next slot's first call is asked while a slot is read and checked (`AHEAD`): its
request depends on nothing the slot before keeps, and what it writes is checked only
after that slot is kept, so the suite is the one a walk one call at a time makes.

Tests are written for the first scenario and copied to the others: a copy keeps the
written inputs, leaves the other scenario's fixed inputs to the run, fills an input that
scenario leaves open from the prompt's default or sample, and has no expected output.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, create_model

from promptgen.context import Context
from promptgen.llm.types import Completion
from promptgen.model import Scenario
from promptgen.prompting import generated_inputs, stage_messages
from promptgen.prompting.advice import advice
from promptgen.prompting.cases import complete_inputs, inputs_model
from promptgen.prompting.input_checks import COPIED_WORDS, copies, kind_of, problem
from promptgen.prompting.per_item import answers
from promptgen.prompting.sample_shape import case_unmet, without_lead_in
from promptgen.prompting.writing import (
    case_of,
    context_of,
    described_inputs,
    describes_itself,
    example_of,
    given_inputs,
    guidance_of,
    noun,
    shown_given,
)
from promptgen.results import Behaviour, Test
from promptgen.stage import Scope
from promptgen.stages._plan import Slot
from promptgen.stages._suite import (
    behaviour_counts,
    count_empty,
    filled,
    keep,
    left_empty_before,
    make_test,
    note_key,
    others_of,
    tests_of,
)
from promptgen.stages.behaviours import guidance

# A slot is asked at these temperatures, each with a seed of its own (at a low
# temperature a small model writes one input for every case), ...
TEMPERATURES = (0.7, 1.0, 1.2)
# ... then once for this many candidates, of which the first that passes is kept.
CANDIDATES = 4
# After this many slots in a row left empty because the writer wrote no input of the
# declared kind (a diff that changes no line, a loop, no answer), a slot gets one try (no
# list); after GIVE_UP, none: the writer cannot write this kind of input. The 1.5B wrote
# no diff that changed a line for 16 of the commit sample's 19 slots; three tries each
# took the generation from 443 to 638 s. Slots left empty for what their input said (a
# blank, a note to the assistant) do not count: another draw often passes.
EMPTY_STREAK = 2
GIVE_UP = 5
_FORM_KINDS = frozenset({"wrong_kind", "looping"})
# Slots whose first call is asked ahead while the current one is read, checked and asked
# again. On 2 cores two calls at a core each write 1.4 times as fast as one call on both
# (docs/performance.md), and the checks of one slot leave the model idle otherwise.
AHEAD = 1
# A list of candidates only for short inputs: four diffs in one answer took minutes.
LIST_AT_MOST = 600
LIST_VARIANT = 1000
# Tokens a written input may take (a small model that loops runs on to its limit).
MIN_TOKENS, MAX_TOKENS = 300, 900


@dataclass
class Walk:
    scenarios: list[Scenario | None]
    slots: list[Slot]

    def calls(self, ctx: Context) -> int:
        """One call per slot still empty that needs a writer (a class check each too)."""
        first = self.scenarios[0]
        name = first.name if first else None
        names = generated_inputs(ctx.prompt, set(first.parameters) if first else set())
        calls = 0
        for slot in self.slots:
            if _done(ctx, slot, name) or left_empty_before(ctx, slot, first):
                continue
            fixed = slot.behaviour.inputs if slot.behaviour else {}
            if [n for n in names if n not in fixed]:
                calls += 2 if _classes(ctx, slot.behaviour) else 1
        return calls


def _done(ctx: Context, slot: Slot, scenario: str | None) -> bool:
    have = len(tests_of(ctx, slot, scenario))
    return have > slot.index if slot.behaviour is None else have > 0


def _classes(ctx: Context, behaviour: Behaviour | None) -> list[Behaviour]:
    """The classes a class behaviour is told apart from (those of its sentence), or []
    where there is nothing to check against."""
    if behaviour is None or behaviour.kind != "class" or not behaviour.expected_class:
        return []
    same = [
        b
        for b in ctx.behaviours
        if b.kind == "class" and b.source == behaviour.source and b.expected_class
    ]
    labels = {b.expected_class for b in same if b.expected_class}
    if len(labels) < 2 or all(label.isdigit() for label in labels):
        return []  # a scale's two ends: any middle score fits neither
    if all(b.text.startswith("the right ") for b in same):
        # Bare labels ("type is one of feat, fix, ..."): the prompt says nothing a judge
        # could sort by, and the 1.5B read 6 of 9 commit types' diffs as "fix".
        return []
    return same


async def walk(scope: Scope, plan: Walk) -> None:
    ctx = scope.ctx
    first, *others = plan.scenarios
    name = first.name if first else None
    names = generated_inputs(ctx.prompt, set(first.parameters) if first else set())
    empty = 0  # slots in a row without an input of the declared kind (a re-run walks
    # them in the same order)
    ahead: dict[int, asyncio.Task[Completion[Any]]] = {}
    try:
        for index, slot in enumerate(plan.slots):
            if _done(ctx, slot, name):
                empty = 0
                continue
            if left_empty_before(ctx, slot, first):  # an edit kept its rule: not asked
                continue
            if empty >= GIVE_UP:
                scope.count("slots_not_asked")
                scope.note(
                    note_key(slot, first),
                    "not asked: the writer wrote no input of the declared kind for the "
                    f"{GIVE_UP} slots before it",
                )
                continue
            if empty < GIVE_UP - 1:  # the slots after are asked whatever this one gets
                _ask_ahead(scope, plan, index, first, names, ahead)
            hopeless = empty >= EMPTY_STREAK
            test, why = await _write(
                scope, slot, index, first, names, hopeless, ahead.pop(index, None)
            )
            if scope.failed:
                return  # undone; a re-run asks again (answered from the cache)
            if test is None:
                if _form_failure(why):
                    empty += 1
                scope.note(note_key(slot, first), why)
                continue
            empty = 0
            scope.note(note_key(slot, first), None)
            keep(scope, [test])
            for scenario in others:
                keep(scope, [_copy(ctx, test, scenario)])
            scope.checkpoint()
    finally:
        await _settle(ahead)
    scope.set_count("behaviours_with_tests", len(behaviour_counts(ctx)))
    count_empty(scope)


def _ask_ahead(
    scope: Scope,
    plan: Walk,
    index: int,
    scenario: Scenario | None,
    names: list[str],
    ahead: dict[int, asyncio.Task[Completion[Any]]],
) -> None:
    """Start the first call of the AHEAD slots after `index` that will be asked and
    need a writer, unless started already."""
    ctx = scope.ctx
    where = scenario.name if scenario else None
    for later in range(index + 1, min(index + 1 + AHEAD, len(plan.slots))):
        slot = plan.slots[later]
        if later in ahead or _done(ctx, slot, where) or left_empty_before(ctx, slot, scenario):
            continue
        _, given, left = _split(ctx, slot, later, names)
        if left:
            ahead[later] = asyncio.create_task(
                _request(scope, slot, left, given, 1, _variant(later, 0), TEMPERATURES[0])
            )


async def _settle(ahead: dict[int, asyncio.Task[Completion[Any]]]) -> None:
    """Wait for calls asked ahead that no slot read (the walk failed or stopped): their
    answers are in the response cache for the re-run."""
    if ahead:
        await asyncio.gather(*ahead.values(), return_exceptions=True)


def _split(
    ctx: Context, slot: Slot, index: int, names: list[str]
) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """The slot's inputs: fixed by its case, given (an author's article), left to write."""
    behaviour = slot.behaviour
    fixed = dict(behaviour.inputs) if behaviour else {}
    left = [n for n in names if n not in fixed]
    given = given_inputs(ctx.prompt, left, index)
    fixed.update(given)
    return fixed, given, [n for n in left if n not in given]


def _variant(index: int, attempt: int) -> int:
    """The variant (the seed's offset) of a slot's try: one of its own per slot and try,
    the same whether the try is asked ahead or in turn."""
    return index * len(TEMPERATURES) + attempt


def _form_failure(why: str) -> bool:
    """Whether a slot was left empty for want of an input of the declared kind."""
    last = why.rpartition("; the last: ")[2]
    return last == "no answer" or kind_of(last) in _FORM_KINDS


async def _write(
    scope: Scope,
    slot: Slot,
    index: int,
    scenario: Scenario | None,
    names: list[str],
    hopeless: bool = False,
    asked: asyncio.Task[Completion[Any]] | None = None,
) -> tuple[Test | None, str]:
    """A test for the slot, or (None, why not); one try only when `hopeless`. `asked`
    is the slot's first call, asked ahead."""
    ctx = scope.ctx
    behaviour = slot.behaviour
    where = scenario.name if scenario else None
    fixed, given, left = _split(ctx, slot, index, names)
    if not left:  # the case fixes every input: nothing to write
        inputs, _ = complete_inputs(ctx.prompt, fixed, names, repair=False)
        if inputs is None:
            return None, "the case leaves an input without a value"
        return make_test(slot.rule, behaviour, where, inputs, None, None, 0), ""
    why = "no answer"
    tries, size = 0, 0
    for attempt, temperature in enumerate(TEMPERATURES[:1] if hopeless else TEMPERATURES):
        variant = _variant(index, attempt)
        if attempt == 0 and asked is not None:
            found = _read(scope, await asked)
        else:
            hint = advice(why, noun(left))  # "" on a first try ("no answer")
            found = await _ask(scope, slot, left, given, 1, variant, temperature, hint)
        tries += 1
        if found is None:
            return None, ""
        for written in found:
            size = len(json.dumps(written, ensure_ascii=False))
            test, why = await _checked(scope, slot, written, fixed, given, names, where)
            if test is not None:
                return test, ""
    if not hopeless and _listing_helps(why) and size <= LIST_AT_MOST:
        # A small model that repeats one short input (a haiku topic) lists different ones.
        found = await _ask(
            scope, slot, left, given, CANDIDATES, LIST_VARIANT + index, TEMPERATURES[1],
            advice(why, noun(left)),
        )  # fmt: skip
        tries += 1
        for written in found or []:
            test, why = await _checked(scope, slot, written, fixed, given, names, where)
            if test is not None:
                return test, ""
    after = f"{tries} {'try' if tries == 1 else 'tries'}"
    if hopeless:
        after += f" ({EMPTY_STREAK} slots before it got no input of the declared kind)"
    return None, f"no valid test after {after}; the last: {why}"


def _listing_helps(why: str) -> bool:
    """Whether a list of candidates is worth asking for after the single tries failed:
    for inputs that repeated others, or did not read as their class; not for copies of
    a sample or the prompt (a list of them is copies too, at four times the cost)."""
    return "near-duplicate" in why or "opens like" in why or "the check read it" in why


async def _ask(
    scope: Scope,
    slot: Slot,
    left: list[str],
    given: dict[str, Any],
    count: int,
    variant: int,
    temperature: float,
    hint: str,
) -> list[dict[str, Any]] | None:
    """`_request` asked in turn and read (`_read`)."""
    return _read(scope, await _request(scope, slot, left, given, count, variant, temperature, hint))


async def _request(
    scope: Scope,
    slot: Slot,
    left: list[str],
    given: dict[str, Any],
    count: int,
    variant: int,
    temperature: float,
    hint: str = "",
) -> Completion[Any]:
    """The writer's call for `count` sets of values for `left`, beside the `given` ones,
    told `hint` after a refused try (nothing is recorded of its answer here: a call asked
    ahead is read when its slot's turn comes, by `_read`)."""
    ctx, gen = scope.ctx, scope.cfg.gen
    example = example_of(ctx.prompt, left)
    messages = stage_messages(
        "test_input",
        inputs=_shown(ctx, left),
        noun=noun(left),
        case=case_of(slot.rule, slot.behaviour),
        context=context_of(slot.behaviour),
        example=example,
        given=shown_given(given),
        guidance=guidance_of(ctx.prompt, guidance(ctx, scope.cfg)),
        count=count,
        retry=hint,
    )
    budget = min(MAX_TOKENS, MIN_TOKENS + len(example) // 2) * count  # written, not shown
    return await scope.complete(
        messages, model="rules", output=inputs_model(ctx.prompt, left, count),
        temperature=temperature if gen.temperature is None or variant else gen.temperature,
        max_tokens=budget, variant=variant,
    )  # fmt: skip


def _read(scope: Scope, result: Completion[Any]) -> list[dict[str, Any]] | None:
    """The sets of values a writer's answer holds; [] for an unusable answer, None when
    the call failed (the walk stops; a re-run asks again)."""
    if not result.ok:
        if result.text is not None:  # an answer, cut off or not of the schema: next way
            scope.count("answers_unusable")
            return []
        scope.fail(result.error)  # no answer at all (the server, the model): a re-run
        return None
    found = answers(result.parsed)
    return [found[k].inputs.model_dump(by_alias=True) for k in sorted(found)]


async def _checked(
    scope: Scope,
    slot: Slot,
    written: dict[str, Any],
    fixed: dict[str, Any],
    given: dict[str, Any],
    names: list[str],
    where: str | None,
) -> tuple[Test | None, str]:
    ctx = scope.ctx
    behaviour = slot.behaviour
    left = [n for n in names if n not in fixed]
    # A text that opens with the prompt's own line is the text after it.
    written = {n: without_lead_in(v, ctx.prompt) if n in left else v for n, v in written.items()}
    case = case_of(slot.rule, behaviour)
    others = others_of(ctx, where)
    why = problem(
        {**written, **fixed}, ctx.prompt, left, others=others, case=case, small_writer=True
    )
    if why is None:
        why = _copies_given(written, left, given)
    if why is None and any(copies(written.get(n), _shown(ctx, left)) for n in left):
        # the description the writer was shown, made from the intent where the author
        # gave none ("what a user sends to an AI model that ... keeps the code secret")
        why = f"{left[0]} copies the input's description"
    if why is None and any(describes_itself(written.get(n)) for n in left):
        why = "the input describes itself instead of being one"
    if why is None and behaviour is not None:
        why = case_unmet(behaviour.kind, behaviour.text, [written.get(n) for n in left])
    if why is not None:
        scope.count("invalid_dropped")
        scope.count(f"dropped_{kind_of(why)}")
        return None, why
    classes = _classes(ctx, behaviour)
    if classes and behaviour is not None:
        said = await _sorted_as(scope, written, left, classes)
        if said is not None and said != behaviour.expected_class:
            # Among four classes the 1.5B read plain facts as "positive" or "mixed"; against
            # the class it read alone, "neutral" in both orders. It also leans to the first
            # of two: an all-praise review read "mixed" when listed first. So the input is
            # kept when both orders read it as its class (the class listed last first).
            target = behaviour.expected_class
            pair = [b for b in classes if b.expected_class == said] + [
                b for b in classes if b.expected_class == target
            ]
            for order in (pair, pair[::-1]):
                if await _sorted_as(scope, written, left, order) != target:
                    break
            else:
                said = target
        if said is not None and said != behaviour.expected_class:
            scope.count("class_mismatch")
            return None, f"the check read it as {said!r}, not {behaviour.expected_class!r}"
    inputs = {**written, **fixed}
    if behaviour is not None:
        for name, text in behaviour.appended.items():
            inputs[name] = f"{inputs.get(name, '')}{text}"
    inputs = {n: inputs[n] for n in names if n in inputs}
    test = make_test(slot.rule, behaviour, where, inputs, None, None, 0)
    if behaviour is not None and behaviour.kind == "class" and not classes:
        # Nothing sorted the input into its class (bare labels, a scale's ends, a class
        # alone): the test exercises the class, but its label is the writer's guess, and
        # an expected output is right or absent.
        test = test.model_copy(update={"expected_class": None, "expected_output": None})
    return test, ""


def _shown(ctx: Context, left: list[str]) -> str:
    """The inputs' descriptions as the writer is shown them (`_request`)."""
    return described_inputs(ctx.prompt, left, ctx.intent)


def _copies_given(written: dict[str, Any], left: list[str], given: dict[str, Any]) -> str | None:
    """A written value that copies a passage of an input it was shown (the question that
    quotes the article back)."""
    for name, value in given.items():
        long = isinstance(value, str) and len(value.split()) >= COPIED_WORDS
        if long and any(copies(written.get(n), value) for n in left):
            return f"{left[0]} copies the {name} it was shown"
    return None


async def _sorted_as(
    scope: Scope, written: dict[str, Any], left: list[str], classes: list[Behaviour]
) -> str | None:
    """The class a check call sorts the written input into (None: the call failed)."""
    labels = [b.expected_class or "" for b in classes]
    lines = [
        f"- {b.expected_class}" + (f": {b.text}" if not b.text.startswith("the right ") else "")
        for b in classes
    ]
    value = written[left[0]] if len(left) == 1 else written
    messages = stage_messages("class_check", value=str(value), classes="\n".join(lines))
    result = await scope.complete(
        messages, model="rules", output=_label_model(tuple(labels)), temperature=0
    )
    if not result.ok:
        return None
    parsed: Any = result.parsed  # a model built at run time: mypy knows none of its fields
    return str(parsed.label)


def _label_model(labels: tuple[str, ...]) -> type[BaseModel]:
    label: Any = Literal[labels]  # built at run time from the labels: not a static type
    return create_model("ClassCheck", label=(label, ...))


def _copy(ctx: Context, test: Test, scenario: Scenario | None) -> Test:
    """`test` in another scenario: its generated inputs where that scenario asks for
    them, the scenario's own fixed inputs left to the run, and no expected output (it
    was written for the first scenario)."""
    fixed = set(scenario.parameters) if scenario else set()
    names = generated_inputs(ctx.prompt, fixed)
    given = {k: v for k, v in test.inputs.items() if k in names}
    inputs, _ = complete_inputs(ctx.prompt, given, names)
    inputs = inputs if inputs is not None else given
    where = scenario.name if scenario else None
    return test.model_copy(
        update={
            "id": Test.make_id("generated", test.rule_id, where, inputs),
            "scenario": where,
            "inputs": inputs,
            "expected_output": None,
        }
    )


__all__ = ["Walk", "filled", "walk"]
