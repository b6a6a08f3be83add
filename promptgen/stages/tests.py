"""Test generation: per scenario and chunk of rules, concurrently; plus author samples."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass
from typing import Any

from promptgen.config import RunConfig
from promptgen.context import Context
from promptgen.model import Scenario
from promptgen.prompting import (
    fixed_text,
    generated_inputs,
    inputs_text,
    instruction,
    prompt_text,
    samples_text,
    scenario_text,
    stage_messages,
)
from promptgen.prompting.cases import case_inputs, cases_model, complete_inputs, labelled_cases
from promptgen.results import Rule, Test
from promptgen.selection import sample_tests
from promptgen.stage import Projection, Scope, WorkItem, sort_tests, test_key

requires = ("intent", "input_spec", "rules", "inverse_rules")
# With --drop-ungrounded the chunks depend on the verdicts, so they wait for them.
after = ("groundedness",)
phase = "generation"
SAMPLES = "samples"
TOPUP = "top-up"
STEP = "stepwise"


@dataclass
class Chunk:
    scenario: Scenario | None
    rules: list[Rule]

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


def target_rules(ctx: Context, cfg: RunConfig) -> list[Rule]:
    """Rules tests are generated for: grounded (if asked), capped, with their inverses."""
    gen = cfg.gen
    rules = [r for r in ctx.rules if not (gen.drop_ungrounded and r.grounded is False)]
    rules = rules[: gen.max_rules or None]
    kept = {r.id for r in rules}
    return [*rules, *(r for r in ctx.inverse_rules if r.inverse_of in kept)]


def plan_chunks(ctx: Context, cfg: RunConfig) -> list[Chunk]:
    rules = target_rules(ctx, cfg)
    groups = (
        [[r for r in rules if not r.inverse], [r for r in rules if r.inverse]]
        if cfg.gen.split_rules
        else [rules]
    )
    size = chunk_size(cfg)
    scenarios: list[Scenario | None] = list(ctx.prompt.scenarios) or [None]
    return [
        Chunk(scenario, group[i : i + size])
        for scenario in scenarios
        for group in groups
        if group
        for i in range(0, len(group), size)
    ]


def chunk_size(cfg: RunConfig) -> int:
    """Rules per generation call: one in stepwise mode (a small model asked for tests
    of many rules at once answers for a few and repeats inputs)."""
    return 1 if cfg.stepwise else cfg.gen.max_rules_per_test_generation


def input_key(scenario: str | None, inputs: dict[str, Any]) -> str:
    return json.dumps([scenario, inputs], sort_keys=True, ensure_ascii=False)


def enabled(cfg: RunConfig) -> bool:
    """`--tests FILE` evaluates the given tests and generates none."""
    return cfg.generating


def rounds(cfg: RunConfig) -> int:
    """Each generation round of a chunk sees the tests of the rounds before it (a
    top-up round follows only when a rule is left short: not planned for)."""
    return cfg.gen.test_generations


def todo(ctx: Context, cfg: RunConfig) -> list[WorkItem]:
    done = set(ctx.stage("tests").done)
    items = [] if SAMPLES in done else [WorkItem(SAMPLES, calls=0)]
    if cfg.stepwise:
        return items + [
            WorkItem(w.key, w, w.calls) for w in plan_walks(ctx, cfg) if w.key not in done
        ]
    calls = cfg.gen.test_generations
    chunks = [WorkItem(c.key, c, calls) for c in plan_chunks(ctx, cfg) if c.key not in done]
    if chunks:
        return items + chunks
    # Every chunk answered: one top-up round per scenario for the rules left short.
    return items + [WorkItem(t.key, t) for t in plan_topups(ctx, cfg) if t.key not in done]


def rules_short(ctx: Context, cfg: RunConfig, scenario: Scenario | None) -> dict[str, int]:
    """Target rule id -> how many generated tests it lacks in `scenario`."""
    name = scenario.name if scenario else None
    have = Counter(t.rule_id for t in ctx.tests if t.origin == "generated" and t.scenario == name)
    wanted = cfg.gen.tests_per_rule
    return {r.id: wanted - have[r.id] for r in target_rules(ctx, cfg) if have[r.id] < wanted}


@dataclass
class TopUp:
    """The rules of one scenario that got fewer tests than asked, asked for again once."""

    scenario: Scenario | None
    rules: list[Rule]
    lacking: dict[str, int]  # rule id -> tests it lacks

    @property
    def key(self) -> str:
        return f"{TOPUP}|{self.scenario.name if self.scenario else '-'}"


def plan_topups(ctx: Context, cfg: RunConfig) -> list[TopUp]:
    scenarios: list[Scenario | None] = list(ctx.prompt.scenarios) or [None]
    plans = []
    for scenario in scenarios:
        short = rules_short(ctx, cfg, scenario)
        if short:
            rules = [r for r in target_rules(ctx, cfg) if r.id in short]
            plans.append(TopUp(scenario, rules, short))
    return plans


@dataclass
class Walk:
    """Stepwise: the rules in turn, one call per rule and generation round, written for
    the first scenario; the other scenarios get copies of each test (their own fixed
    inputs, any input they leave open filled from the prompt's default or sample), so
    a small model is asked once per rule, not once per rule and scenario."""

    scenarios: list[Scenario | None]
    rules: list[Rule]
    rounds: int

    @property
    def key(self) -> str:
        return STEP

    @property
    def calls(self) -> int:
        return len(self.rules) * self.rounds


def plan_walks(ctx: Context, cfg: RunConfig) -> list[Walk]:
    scenarios: list[Scenario | None] = list(ctx.prompt.scenarios) or [None]
    rules = target_rules(ctx, cfg)
    return [Walk(scenarios, rules, cfg.gen.test_generations)] if rules else []


# Stepwise test calls are asked at these temperatures, each rule with seeds of its own:
# at the usual low temperature a small model wrote one input for every rule (14 of 26
# answers repeated one on samples/sql-from-question.prompty). A rule whose answer
# repeats an input already written is asked again at the next, before its shortfall is
# recorded.
STEP_TEMPERATURES = (0.7, 1.0, 1.2)
# Then once more, for this many candidates beyond what the rule lacks (seeds of their own).
CANDIDATES = 4
LIST_VARIANT = 1000


async def _walk(scope: Scope, walk: Walk) -> None:
    ctx, cfg = scope.ctx, scope.cfg
    first, *others = walk.scenarios
    name = first.name if first else None
    wanted = cfg.gen.tests_per_rule
    first_temperature = cfg.gen.temperature  # the user's, when set, for the first try
    temperatures = (
        STEP_TEMPERATURES
        if first_temperature is None
        else (first_temperature, *STEP_TEMPERATURES[1:])
    )
    for index, rule in enumerate(walk.rules):
        for generation in range(walk.rounds):
            for attempt, temperature in enumerate(temperatures):
                mine = [t for t in ctx.tests if t.rule_id == rule.id and t.scenario == name]
                lacking = wanted * (generation + 1) - len(mine)
                if lacking <= 0:
                    break
                made = await _generate(
                    scope, Chunk(first, [rule]), generation, lacking, [],
                    variant=index * len(temperatures) + attempt, temperature=temperature,
                )  # fmt: skip
                if made is None:
                    return  # undone; a re-run asks again (answered from the cache)
                _keep(scope, made, {rule.id: lacking})
            mine = [t for t in ctx.tests if t.rule_id == rule.id and t.scenario == name]
            lacking = wanted * (generation + 1) - len(mine)
            if lacking > 0:
                # The last try: several candidates in one answer, the first new ones kept
                # (a small model that repeats one short input lists different ones).
                made = await _generate(
                    scope, Chunk(first, [rule]), generation, lacking + CANDIDATES, [],
                    variant=LIST_VARIANT + index, temperature=STEP_TEMPERATURES[1],
                )  # fmt: skip
                if made is None:
                    return
                _keep(scope, made, {rule.id: lacking})
        mine = [t for t in ctx.tests if t.rule_id == rule.id and t.scenario == name]
        for scenario in others:
            _keep(scope, [_copy(ctx, test, scenario) for test in mine])
        total = wanted * walk.rounds
        for scenario in walk.scenarios:
            where = scenario.name if scenario else None
            got = sum(t.rule_id == rule.id and t.scenario == where for t in ctx.tests)
            scope.note(
                f"{rule.id}|{where}" if where else rule.id,
                None
                if got >= total
                else f"{got} of {total} tests after {len(temperatures) + 1} tries: the "
                "answers repeated inputs other tests already have",
            )
    if ctx.stage("tests").notes:
        scope.set_count("rules_short", len(ctx.stage("tests").notes))


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


def estimate(ctx: Context, cfg: RunConfig, projection: Projection) -> int:
    gen = cfg.gen
    scenarios = max(1, len(ctx.prompt.scenarios))
    if ctx.rules:
        calls = sum(i.calls for i in todo(ctx, cfg))
    else:
        n = projection.rules
        groups = [n, n] if gen.split_rules else [2 * n]
        size = chunk_size(cfg)
        asked = 1 if cfg.stepwise else scenarios  # stepwise copies tests to the others
        calls = asked * sum(-(-g // size) for g in groups if g) * gen.test_generations
    projection.generated = (
        2 * projection.rules * gen.tests_per_rule * gen.test_generations * scenarios
    )
    if ctx.tests and "tests" in projection.complete:
        projection.generated = sum(t.origin == "generated" for t in ctx.tests)
    projection.tests = projection.generated
    return calls


async def run(item: WorkItem, scope: Scope) -> None:
    if item.key == SAMPLES:
        _add_samples(scope.ctx)
    elif isinstance(item.data, Walk):
        await _walk(scope, item.data)
    elif isinstance(item.data, TopUp):
        await _top_up(scope, item.data)
    else:
        chunk: Chunk = item.data
        count = scope.cfg.gen.tests_per_rule
        new: list[Test] = []
        for generation in range(scope.cfg.gen.test_generations):
            made = await _generate(scope, chunk, generation, count, new)
            if made is None:
                return  # this chunk stays undone (nothing kept); a re-run asks again
            new.extend(made)
        _keep(scope, new)
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


async def _top_up(scope: Scope, plan: TopUp) -> None:
    """Ask once more for the tests the short rules lack (in chunks as usual), then
    record why a rule still has fewer than asked."""
    ctx, cfg = scope.ctx, scope.cfg
    size = chunk_size(cfg)
    short = plan.lacking
    generation = cfg.gen.test_generations  # after the regular rounds
    name = plan.scenario.name if plan.scenario else None
    new: list[Test] = []
    for i in range(0, len(plan.rules), size):
        chunk = Chunk(plan.scenario, plan.rules[i : i + size])
        ids = {r.id for r in chunk.rules}
        earlier = [t for t in ctx.tests if t.rule_id in ids and t.scenario == name]
        count = max(short.get(r.id, 0) for r in chunk.rules)
        made = await _generate(scope, chunk, generation, count, earlier)
        if made is None:
            return  # asked again by a re-run
        new.extend(made)
    _keep(scope, new, short)
    left = rules_short(ctx, cfg, plan.scenario)
    where = f" in scenario {plan.scenario.name!r}" if plan.scenario else ""
    for rule in plan.rules:
        key = f"{rule.id}|{plan.scenario.name}" if plan.scenario else rule.id
        lacking = left.get(rule.id)
        if lacking:
            got = cfg.gen.tests_per_rule - lacking
            scope.note(
                key,
                f"{got} of {cfg.gen.tests_per_rule} tests{where} after a top-up round: "
                "the answers held no further test with a new input for this rule",
            )
        else:
            scope.note(key, None)
    if ctx.stage("tests").notes:
        scope.set_count("rules_short", len(ctx.stage("tests").notes))


async def _generate(
    scope: Scope,
    chunk: Chunk,
    generation: int,
    count: int,
    earlier: list[Test],
    variant: int = 0,
    temperature: float | None = None,
) -> list[Test] | None:
    """One generation call for `chunk`: `count` tests per rule, different from the
    `earlier` ones shown. None when the call failed."""
    ctx, gen = scope.ctx, scope.cfg.gen
    fixed = set(chunk.scenario.parameters) if chunk.scenario else set()
    names = generated_inputs(ctx.prompt, fixed)
    labels = chunk.labels()
    rules_text = "\n".join(f"{label}. {rule.text}" for label, rule in labels.items())
    existing = "\n".join(f"- {json.dumps(t.inputs, ensure_ascii=False)}" for t in earlier)
    if scope.cfg.stepwise and len(chunk.rules) == 1:
        # One rule, a short focused prompt. The other tests' inputs are not shown: a small
        # model shown them copies one.
        messages = stage_messages(
            "test_for_rule",
            prompt=prompt_text(ctx.prompt),
            intent=ctx.intent,
            inputs=inputs_text(ctx.prompt, names),
            rule=chunk.rules[0].text,
            inverse=chunk.rules[0].inverse,
            count=count,
            scenario=scenario_text(chunk.scenario),
            fixed=fixed_text(ctx.prompt),
            instructions=instruction(ctx.prompt, gen.instructions, "tests"),
        )
    else:
        messages = stage_messages(
            "tests",
            prompt=prompt_text(ctx.prompt),
            intent=ctx.intent,
            input_spec=ctx.input_spec,
            inputs=inputs_text(ctx.prompt, names),
            rules=rules_text,
            count=count,
            scenario=scenario_text(chunk.scenario),
            fixed=fixed_text(ctx.prompt),
            samples=samples_text(ctx.prompt, gen.test_samples_count, gen.test_samples_shuffle),
            existing=existing,
            instructions=instruction(ctx.prompt, gen.instructions, "tests"),
        )
    expected = len(labels) * count
    result = await scope.complete(
        messages, model="rules", output=cases_model(ctx.prompt, names, list(labels), count),
        temperature=gen.temperature if temperature is None else temperature,
        max_tokens=min(16000, 400 * expected + 200), variant=variant,
    )  # fmt: skip
    if not result.ok:
        scope.fail(result.error)
        return None
    cases = labelled_cases(result.parsed)
    scope.count("cases_missing", expected - len(cases))
    return _to_tests(scope, chunk, labels, names, cases, generation)


def _keep(scope: Scope, new: list[Test], limit: dict[str, int] | None = None) -> None:
    """Add the tests whose input is new; with `limit` (a top-up), at most that many per
    rule.

    Chunks run side by side: when two of their tests have one input, the one that sorts
    first (`test_key`) is kept whichever call returned first, so the test set does not
    depend on completion order. A top-up never displaces a test."""
    ctx = scope.ctx
    kept: Counter[str] = Counter()
    rank = test_key(ctx)
    seen = {input_key(t.scenario, t.inputs): i for i, t in enumerate(ctx.tests)}
    for test in new:
        key = input_key(test.scenario, test.inputs)
        if key in seen:
            scope.count("duplicates_dropped")
            other = seen[key]
            if limit is None and rank(test) < rank(ctx.tests[other]):
                ctx.tests[other] = test  # it takes the place of the one it sorts before
            continue
        rule = test.rule_id or ""
        if limit is not None and kept[rule] >= limit.get(rule, 0):
            continue  # a top-up keeps only what the rule lacks
        kept[rule] += 1
        seen[key] = len(ctx.tests)
        ctx.tests.append(test)


def _to_tests(
    scope: Scope,
    chunk: Chunk,
    labels: dict[str, Rule],
    names: list[str],
    cases: list[tuple[str, Any]],
    generation: int,
) -> list[Test]:
    ctx = scope.ctx
    tests = []
    for label, case in cases:
        rule = labels[label]  # a property of the schema: always one of the chunk's
        inputs, repaired = complete_inputs(ctx.prompt, case_inputs(case), names)
        if inputs is None:
            scope.count("missing_input_dropped")
            continue
        if repaired:
            scope.count("missing_input_repaired")
        scenario = chunk.scenario.name if chunk.scenario else None
        tests.append(
            Test(
                id=Test.make_id("generated", rule.id, scenario, inputs),
                rule_id=rule.id,
                inverse=rule.inverse,  # from the rule itself, never from a position
                scenario=scenario,
                inputs=inputs,
                expected_output=case.expected_output,
                reasoning=case.reasoning,
                generation=generation,
                origin="generated",
            )
        )
    return tests
