"""Test generation: per scenario and chunk of rules, concurrently; plus author samples."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from promptgen.config import RunConfig
from promptgen.context import Context
from promptgen.model import Scenario
from promptgen.prompting import (
    generated_inputs,
    inputs_text,
    instruction,
    prompt_text,
    samples_text,
    stage_messages,
)
from promptgen.prompting.cases import case_inputs, cases_model, complete_inputs
from promptgen.results import Rule, Test
from promptgen.stage import Projection, Scope, WorkItem

requires = ("intent", "input_spec", "rules", "inverse_rules")
# With --drop-ungrounded the chunks depend on the verdicts, so they wait for them.
after = ("groundedness",)
phase = "generation"
SAMPLES = "samples"


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
    size = cfg.gen.max_rules_per_test_generation
    scenarios: list[Scenario | None] = list(ctx.prompt.scenarios) or [None]
    return [
        Chunk(scenario, group[i : i + size])
        for scenario in scenarios
        for group in groups
        if group
        for i in range(0, len(group), size)
    ]


def input_key(scenario: str | None, inputs: dict[str, Any]) -> str:
    return json.dumps([scenario, inputs], sort_keys=True, ensure_ascii=False)


def enabled(cfg: RunConfig) -> bool:
    """`--tests FILE` evaluates the given tests and generates none."""
    return cfg.generating


def rounds(cfg: RunConfig) -> int:
    """Each generation round of a chunk sees the tests of the rounds before it."""
    return cfg.gen.test_generations


def todo(ctx: Context, cfg: RunConfig) -> list[WorkItem]:
    done = set(ctx.stage("tests").done)
    items = [] if SAMPLES in done else [WorkItem(SAMPLES, calls=0)]
    calls = cfg.gen.test_generations
    return items + [WorkItem(c.key, c, calls) for c in plan_chunks(ctx, cfg) if c.key not in done]


def estimate(ctx: Context, cfg: RunConfig, projection: Projection) -> int:
    gen = cfg.gen
    scenarios = max(1, len(ctx.prompt.scenarios))
    if ctx.rules:
        calls = sum(i.calls for i in todo(ctx, cfg))
    else:
        n = projection.rules
        groups = [n, n] if gen.split_rules else [2 * n]
        size = gen.max_rules_per_test_generation
        calls = scenarios * sum(-(-g // size) for g in groups if g) * gen.test_generations
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
    else:
        await _chunk(scope, item.data)
    if not scope.failed:
        scope.done()


def _add_samples(ctx: Context) -> None:
    """The author's test samples become tests too (origin `sample`), once."""
    seen = {input_key(t.scenario, t.inputs) for t in ctx.tests}
    for sample in ctx.prompt.test_samples:
        key = input_key(None, sample.inputs)
        if key in seen:
            continue
        seen.add(key)
        expected = sample.expected
        if expected is not None and not isinstance(expected, str):
            expected = json.dumps(expected, ensure_ascii=False)
        ctx.tests.append(
            Test(
                id=Test.make_id("sample", None, None, sample.inputs),
                inputs=sample.inputs,
                expected_output=expected,
                origin="sample",
                valid=True,
                validity_reason="supplied by the prompt's author",
            )
        )


async def _chunk(scope: Scope, chunk: Chunk) -> None:
    ctx, gen = scope.ctx, scope.cfg.gen
    fixed = set(chunk.scenario.parameters) if chunk.scenario else set()
    names = generated_inputs(ctx.prompt, fixed)
    labels = chunk.labels()
    rules_text = "\n".join(f"{label}. {rule.text}" for label, rule in labels.items())
    scenario = ""
    if chunk.scenario:
        params = ", ".join(f"{k} = {v}" for k, v in chunk.scenario.parameters.items())
        scenario = " ".join(
            p for p in (chunk.scenario.name + ":", chunk.scenario.instructions, params) if p
        )
    new: list[Test] = []
    for generation in range(gen.test_generations):
        existing = "\n".join(f"- {json.dumps(t.inputs, ensure_ascii=False)}" for t in new)
        messages = stage_messages(
            "tests",
            prompt=prompt_text(ctx.prompt),
            intent=ctx.intent,
            input_spec=ctx.input_spec,
            inputs=inputs_text(ctx.prompt, names),
            rules=rules_text,
            count=gen.tests_per_rule,
            scenario=scenario,
            samples=samples_text(ctx.prompt),
            existing=existing,
            instructions=instruction(ctx.prompt, gen.instructions, "tests"),
        )
        expected = len(labels) * gen.tests_per_rule
        result = await scope.complete(
            messages, model="rules", output=cases_model(names, list(labels), gen.tests_per_rule),
            temperature=gen.temperature,
            max_tokens=min(16000, 400 * expected + 200),
        )  # fmt: skip
        if not result.ok:
            scope.fail(result.error)
            return  # this chunk stays undone; a re-run asks again
        new.extend(_to_tests(scope, chunk, labels, names, result.parsed.tests, generation))
    seen = {input_key(t.scenario, t.inputs) for t in ctx.tests}
    for test in new:
        key = input_key(test.scenario, test.inputs)
        if key in seen:
            scope.count("duplicates_dropped")
            continue
        seen.add(key)
        ctx.tests.append(test)


def _to_tests(
    scope: Scope,
    chunk: Chunk,
    labels: dict[str, Rule],
    names: list[str],
    cases: list[Any],
    generation: int,
) -> list[Test]:
    ctx = scope.ctx
    tests = []
    for case in cases:
        rule = labels.get(case.rule.strip().upper().rstrip("."))
        if rule is None and len(labels) == 1:
            rule = next(iter(labels.values()))
        if rule is None:
            scope.count("unknown_rule_dropped")
            continue
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
