"""Test generation: one test per planned slot of (rule, behaviour), plus author samples.

The slots come from `_plan.py`: every behaviour the suite must exercise, paired with the
rule it tries, and every rule and inverse rule at least `testsPerRule` times. Whole-prompt
mode asks for the slots of a chunk of rules in one call per scenario (concurrently);
stepwise mode (small models, `_walk.py`) asks for one slot's inputs at a time. Either
way a test is kept only when its inputs pass the checks of `prompting/input_checks.py`
(no template syntax, no copied prompt text, no near-duplicate, of the declared kind),
and it carries an expected output only where one can be trusted.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

from promptgen.config import RunConfig
from promptgen.context import Context
from promptgen.model import Scenario
from promptgen.prompting import (
    fixed_text,
    generated_inputs,
    inputs_text,
    instruction,
    samples_text,
    scenario_text,
    stage_messages,
    writer_view,
)
from promptgen.prompting.behaviours import derive
from promptgen.prompting.cases import case_inputs, cases_model, complete_inputs, labelled_cases
from promptgen.prompting.input_checks import InputIndex, kind_of, problem
from promptgen.prompting.writing import shared_inputs
from promptgen.results import Behaviour, Rule, Test
from promptgen.selection import sample_tests
from promptgen.stage import Projection, Scope, WorkItem, sort_tests
from promptgen.stages._edited import after_edit, kept_pairs
from promptgen.stages._plan import Slot, plan
from promptgen.stages._suite import (
    carried_rules,
    count_empty,
    keep,
    left_empty_before,
    make_test,
    note_key,
    tests_of,
)
from promptgen.stages.behaviours import guidance

if TYPE_CHECKING:
    from promptgen.stages._walk import Walk

requires = ("intent", "input_spec", "rules", "inverse_rules", "behaviours")
# With --drop-ungrounded the chunks depend on the verdicts, so they wait for them.
after = ("groundedness",)
phase = "generation"
SAMPLES = "samples"
TOPUP = "top-up"
STEP = "stepwise"


def target_rules(ctx: Context, cfg: RunConfig) -> list[Rule]:
    """Rules tests are generated for: grounded (if asked), capped, with their inverses."""
    gen = cfg.gen
    rules = [r for r in ctx.rules if not (gen.drop_ungrounded and r.grounded is False)]
    rules = rules[: gen.max_rules or None]
    kept = {r.id for r in rules}
    return [*rules, *(r for r in ctx.inverse_rules if r.inverse_of in kept)]


def planned(ctx: Context, cfg: RunConfig) -> list[Slot]:
    """Every slot of the suite: each behaviour once, each target rule at least
    testsPerRule x testGenerations times."""
    per_rule = cfg.gen.tests_per_rule * cfg.gen.test_generations
    return plan(target_rules(ctx, cfg), ctx.behaviours, per_rule, kept_pairs(ctx))


@dataclass
class Chunk:
    scenario: Scenario | None
    slots: list[Slot]

    @property
    def rules(self) -> list[Rule]:
        seen: dict[str, Rule] = {}
        for slot in self.slots:
            seen.setdefault(slot.rule.id, slot.rule)
        return list(seen.values())

    @property
    def key(self) -> str:
        ids = ",".join(r.id for r in self.rules)
        digest = hashlib.sha256(ids.encode()).hexdigest()[:12]
        return f"{self.scenario.name if self.scenario else '-'}|{digest}"

    def labels(self) -> dict[str, Rule]:
        labels: dict[str, Rule] = {}
        for rule in self.rules:
            prefix = "I" if rule.inverse else "R"
            labels[f"{prefix}{sum(k[0] == prefix for k in labels) + 1}"] = rule
        return labels

    def cases(self, label: str) -> list[Slot]:
        rule = self.labels()[label]
        return [s for s in self.slots if s.rule.id == rule.id]


def plan_chunks(ctx: Context, cfg: RunConfig) -> list[Chunk]:
    """The rules' slots in chunks of maxRulesPerTestGeneration rules per scenario. After
    an edit, only the new rules' (a kept rule's slot left empty, for a behaviour new to
    it, is asked for by the top-up round): a chunk's key is a digest of its rules, so a
    chunk mixing kept and new rules would write the kept rules' tests again."""
    slots = planned(ctx, cfg)
    rules = target_rules(ctx, cfg)
    carried = carried_rules(ctx)
    if carried is not None:
        rules = [r for r in rules if r.id not in carried]
    groups = (
        [[r for r in rules if not r.inverse], [r for r in rules if r.inverse]]
        if cfg.gen.split_rules
        else [rules]
    )
    size = cfg.gen.max_rules_per_test_generation
    scenarios: list[Scenario | None] = list(ctx.prompt.scenarios) or [None]
    chunks = []
    for scenario in scenarios:
        for group in groups:
            for i in range(0, len(group), size):
                ids = {r.id for r in group[i : i + size]}
                mine = [s for s in slots if s.rule.id in ids]
                if mine:
                    chunks.append(Chunk(scenario, mine))
    return chunks


def input_key(scenario: str | None, inputs: dict[str, Any]) -> str:
    return json.dumps([scenario, inputs], sort_keys=True, ensure_ascii=False)


def enabled(cfg: RunConfig) -> bool:
    """`--tests FILE` evaluates the given tests and generates none."""
    return cfg.generating


def rounds(cfg: RunConfig) -> int:
    """One generation call per chunk (a top-up round follows only when a slot is left
    without a test: not planned for)."""
    return 1


def todo(ctx: Context, cfg: RunConfig) -> list[WorkItem[Work]]:
    done = set(ctx.stage("tests").done)
    items: list[WorkItem[Work]] = [] if SAMPLES in done else [WorkItem(SAMPLES, calls=0)]
    if cfg.stepwise:
        from promptgen.stages._walk import Walk

        slots = planned(ctx, cfg)
        if STEP in done or not slots:
            return items
        walk = Walk(list(ctx.prompt.scenarios) or [None], slots)
        return [*items, WorkItem(STEP, walk, walk.calls(ctx))]
    chunks = [WorkItem(c.key, c) for c in plan_chunks(ctx, cfg) if c.key not in done]
    if chunks:
        return items + chunks
    # Every chunk answered: one top-up round per scenario for the slots left empty.
    return items + [WorkItem(t.key, t) for t in plan_topups(ctx, cfg) if t.key not in done]


def empty_slots(ctx: Context, cfg: RunConfig, scenario: Scenario | None) -> list[Slot]:
    """The slots of `scenario` without a test (a plain slot counts as many as planned)."""
    name = scenario.name if scenario else None
    out = []
    for slot in planned(ctx, cfg):
        have = len(tests_of(ctx, slot, name))
        if slot.behaviour is not None and have:
            continue
        if slot.behaviour is None and have > slot.index:
            continue
        out.append(slot)
    return out


@dataclass
class TopUp:
    """The slots of one scenario that got no test, asked for again once."""

    scenario: Scenario | None
    slots: list[Slot]

    @property
    def key(self) -> str:
        return f"{TOPUP}|{self.scenario.name if self.scenario else '-'}"


# A unit's data: none (the samples), the stepwise walk, a chunk, or a top-up round.
Work: TypeAlias = "Walk | Chunk | TopUp | None"


def plan_topups(ctx: Context, cfg: RunConfig) -> list[TopUp]:
    scenarios: list[Scenario | None] = list(ctx.prompt.scenarios) or [None]
    rounds = []
    for scenario in scenarios:
        empty = [s for s in empty_slots(ctx, cfg, scenario)
                 if not left_empty_before(ctx, s, scenario)]  # fmt: skip
        if empty:
            rounds.append(TopUp(scenario, empty))
    return rounds


def estimate(ctx: Context, cfg: RunConfig, projection: Projection) -> int:
    gen = cfg.gen
    scenarios = max(1, len(ctx.prompt.scenarios))
    derive = len(ctx.edit.derive) if ctx.edit is not None else 0
    if ctx.rules and derive:  # an edit's new rules, not derived yet, and their inverses
        per = gen.tests_per_rule * gen.test_generations
        size = gen.max_rules_per_test_generation
        calls = 2 * derive * per if cfg.stepwise else scenarios * -(-2 * derive // size)
        slots = len(planned(ctx, cfg)) + 2 * derive * per
    elif ctx.rules:
        calls = sum(i.calls for i in todo(ctx, cfg))
        behaviours = ctx.behaviours or _expected_behaviours(ctx, cfg)
        per_rule = gen.tests_per_rule * gen.test_generations
        slots = len(plan(target_rules(ctx, cfg), behaviours, per_rule))
    else:
        # Before the rules: each behaviour fills a rule's slot, those beyond a rule each add
        # one (the behaviours read from the prompt; a model's are not known yet).
        n = projection.rules
        known = len(ctx.behaviours or _expected_behaviours(ctx, cfg))
        slots = 2 * n * gen.tests_per_rule * gen.test_generations + max(0, known - 2 * n)
        if cfg.stepwise:
            calls = slots  # one call per slot, written for the first scenario
        else:
            groups = [n, n] if gen.split_rules else [2 * n]
            size = gen.max_rules_per_test_generation
            calls = scenarios * sum(-(-g // size) for g in groups if g)
    projection.generated = slots * scenarios
    samples = sum(t.origin == "sample" for t in ctx.tests)
    if ctx.tests and "tests" in projection.complete:
        projection.generated = sum(t.origin == "generated" for t in ctx.tests)
    elif not samples:  # the author's samples become tests too (no call), and are run
        samples = len(sample_tests(ctx.prompt))
    projection.tests = projection.generated + samples
    return calls


def _expected_behaviours(ctx: Context, cfg: RunConfig) -> list[Behaviour]:
    """Before the behaviours stage ran: those read from the prompt (a model's, in
    whole-prompt mode, are not known yet)."""
    return derive(ctx.prompt, guidance(ctx, cfg)) if cfg.gen.behaviours else []


async def run(item: WorkItem[Work], scope: Scope) -> None:
    if item.key == SAMPLES:
        _add_samples(scope.ctx)
        if scope.ctx.edit is not None:
            after_edit(scope.ctx)
    elif item.key == STEP:
        from promptgen.stages._walk import Walk, walk

        assert isinstance(item.data, Walk)
        await walk(scope, item.data)
    elif isinstance(item.data, TopUp):
        await _top_up(scope, item.data)
    else:
        assert isinstance(item.data, Chunk)
        chunk = item.data
        made = await _generate(scope, chunk)
        if made is None:
            return  # this chunk stays undone (nothing kept); a re-run asks again
        keep(scope, made)
    if not scope.failed:
        scope.done()
        sort_tests(scope.ctx)


def _add_samples(ctx: Context) -> None:
    """The author's test samples become tests too (origin `sample`), once."""
    seen = {input_key(t.scenario, t.inputs) for t in ctx.tests}
    for test in sample_tests(ctx.prompt):
        key = input_key(None, test.inputs)
        if key not in seen:
            seen.add(key)
            ctx.tests.append(test)


async def _top_up(scope: Scope, plan_: TopUp) -> None:
    """Ask once more for the slots still without a test (in chunks as usual), then record
    why one is still empty."""
    ctx, cfg = scope.ctx, scope.cfg
    size = cfg.gen.max_rules_per_test_generation
    rules = Chunk(plan_.scenario, plan_.slots).rules
    new: list[Test] = []
    for i in range(0, len(rules), size):
        ids = {r.id for r in rules[i : i + size]}
        chunk = Chunk(plan_.scenario, [s for s in plan_.slots if s.rule.id in ids])
        made = await _generate(scope, chunk, generation=cfg.gen.test_generations)
        if made is None:
            return  # asked again by a re-run
        new.extend(made)
    keep(scope, new)
    empty = empty_slots(ctx, cfg, plan_.scenario)
    left = {s.key for s in empty}
    for slot in plan_.slots:
        scope.note(
            note_key(slot, plan_.scenario),
            "no test with a valid new input after a top-up round" if slot.key in left else None,
        )
    # A top-up test whose input is another slot's test's takes its place when it sorts
    # first (`keep`, so the set does not depend on completion order): that slot is now
    # empty too, and says why.
    asked = {s.key for s in plan_.slots}
    for slot in empty:
        if slot.key not in asked:
            scope.note(note_key(slot, plan_.scenario), DISPLACED)
    count_empty(scope)


DISPLACED = "its test gave way to a top-up test with the same input, written for another slot"


def _cases_text(chunk: Chunk) -> str:
    lines = []
    for label, rule in chunk.labels().items():
        lines.append(f"{label}. {rule.text}")
        for number, slot in enumerate(chunk.cases(label), start=1):
            lines.append(f"   case {number}: {_case_line(slot)}")
    return "\n".join(lines)


def _case_line(slot: Slot) -> str:
    behaviour = slot.behaviour
    if behaviour is None:
        if slot.rule.inverse:
            return "inputs that tempt a model into this mistake"
        return "inputs where following this rule matters"
    line = f"inputs in which {behaviour.text}"
    if behaviour.expected_class:
        line += f' (a correct output gives "{behaviour.expected_class}")'
    if behaviour.inputs:
        line += (
            " (with "
            + ", ".join(f"{k} = {json.dumps(v)}" for k, v in behaviour.inputs.items())
            + ")"
        )
    return line


async def _generate(scope: Scope, chunk: Chunk, generation: int = 0) -> list[Test] | None:
    """One generation call for the slots of `chunk`. None when the call failed."""
    ctx, gen = scope.ctx, scope.cfg.gen
    fixed = set(chunk.scenario.parameters) if chunk.scenario else set()
    names = generated_inputs(ctx.prompt, fixed)
    labels = chunk.labels()
    counts = {label: len(chunk.cases(label)) for label in labels}
    messages = stage_messages(
        "tests",
        prompt=writer_view(ctx.prompt),
        intent=ctx.intent,
        input_spec=ctx.input_spec,
        inputs=inputs_text(ctx.prompt, names),
        rules=_cases_text(chunk),
        scenario=scenario_text(chunk.scenario),
        fixed=fixed_text(ctx.prompt),
        samples=samples_text(ctx.prompt, gen.test_samples_count, gen.test_samples_shuffle),
        instructions=instruction(ctx.prompt, gen.instructions, "tests"),
    )
    expected = sum(counts.values())
    result = await scope.complete(
        messages, model="rules", output=cases_model(ctx.prompt, names, counts),
        temperature=gen.temperature, max_tokens=min(16000, 400 * expected + 200),
        variant=generation,
    )  # fmt: skip
    if not result.ok:
        scope.fail(result.error)
        return None
    cases = labelled_cases(result.parsed)
    scope.count("cases_missing", expected - len(cases))
    return _to_tests(scope, chunk, names, cases, generation)


def samples_of(ctx: Context) -> list[dict[str, Any]]:
    return [t.inputs for t in ctx.tests if t.origin == "sample"]


def _to_tests(
    scope: Scope,
    chunk: Chunk,
    names: list[str],
    cases: list[tuple[str, int, Any]],
    generation: int,
) -> list[Test]:
    ctx = scope.ctx
    labels = chunk.labels()
    scenario = chunk.scenario.name if chunk.scenario else None
    # Within the chunk only (and the samples): a test of another chunk, answered before
    # or after this one, is met in `keep`, which keeps the one that sorts first.
    others = InputIndex(samples_of(ctx), shared=shared_inputs(ctx.prompt))
    tests = []
    for label, number, case in cases:
        rule = labels[label]  # a property of the schema: always one of the chunk's
        slots = chunk.cases(label)
        slot = slots[number - 1] if number <= len(slots) else slots[-1]
        behaviour = slot.behaviour
        written = case_inputs(case)
        fixed = dict(behaviour.inputs) if behaviour else {}
        inputs, _ = complete_inputs(ctx.prompt, {**written, **fixed}, names, repair=False)
        why = problem(
            {**written, **fixed}, ctx.prompt, [n for n in names if n not in fixed],
            others=others, case=behaviour.text if behaviour else "",
        )  # fmt: skip
        if inputs is None or why:
            scope.count("invalid_dropped")
            scope.count(f"dropped_{kind_of(why or 'is empty')}")
            continue
        others.add(inputs)
        tests.append(
            make_test(
                rule, behaviour, scenario, inputs, case.expected_output, case.reasoning, generation
            )
        )
    return tests
