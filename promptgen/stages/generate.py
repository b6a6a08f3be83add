"""Test generation: per scenario and chunk of rules, concurrently; plus author samples."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from promptgen.context import Context
from promptgen.llm import LLM, bounded_gather
from promptgen.model import Scenario
from promptgen.options import Options
from promptgen.results import Rule, Test
from promptgen.stages.cases import case_inputs, cases_model, complete_inputs
from promptgen.stages.common import (
    generated_inputs,
    inputs_text,
    instruction,
    prompt_text,
    samples_text,
    stage_messages,
)

STAGE = "tests"


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


def target_rules(ctx: Context, options: Options) -> list[Rule]:
    """Rules tests are generated for: grounded (if asked), capped, with their inverses."""
    rules = [r for r in ctx.rules if not (options.drop_ungrounded and r.grounded is False)]
    rules = rules[: options.max_rules or None]
    kept = {r.id for r in rules}
    return [*rules, *(r for r in ctx.inverse_rules if r.inverse_of in kept)]


def plan_chunks(ctx: Context, options: Options) -> list[Chunk]:
    rules = target_rules(ctx, options)
    groups = (
        [[r for r in rules if not r.inverse], [r for r in rules if r.inverse]]
        if options.split_rules
        else [rules]
    )
    size = options.max_rules_per_test_generation
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


async def run(ctx: Context, llm: LLM, options: Options) -> Context:
    record = ctx.stage(STAGE)
    _add_samples(ctx)
    chunks = [c for c in plan_chunks(ctx, options) if c.key not in record.done]
    await bounded_gather([lambda c=c: _chunk(ctx, llm, options, c) for c in chunks])
    return ctx


def _add_samples(ctx: Context) -> None:
    """The author's test samples become tests too (origin `sample`), once."""
    record = ctx.stage(STAGE)
    if "samples" in record.done:
        return
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
    record.done.append("samples")
    ctx.checkpoint()


async def _chunk(ctx: Context, llm: LLM, options: Options, chunk: Chunk) -> None:
    record = ctx.stage(STAGE)
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
    for generation in range(options.test_generations):
        existing = "\n".join(f"- {json.dumps(t.inputs, ensure_ascii=False)}" for t in new)
        messages = stage_messages(
            "tests",
            prompt=prompt_text(ctx.prompt),
            intent=ctx.intent,
            input_spec=ctx.input_spec,
            inputs=inputs_text(ctx.prompt, names),
            rules=rules_text,
            count=options.tests_per_rule,
            scenario=scenario,
            samples=samples_text(ctx.prompt),
            existing=existing,
            instructions=instruction(ctx.prompt, options.instructions, "tests"),
        )
        expected = len(labels) * options.tests_per_rule
        result = await llm.complete(
            messages, model="rules", output=cases_model(names), temperature=options.temperature,
            stage=STAGE, max_tokens=min(16000, 400 * expected + 200),
        )  # fmt: skip
        if not result.ok:
            record.error = result.error
            return  # this chunk stays undone; a re-run asks again
        new.extend(_to_tests(ctx, chunk, labels, names, result.parsed.tests, generation))
    seen = {input_key(t.scenario, t.inputs) for t in ctx.tests}
    for test in new:
        key = input_key(test.scenario, test.inputs)
        if key in seen:
            _count(record.counts, "duplicates_dropped")
            continue
        seen.add(key)
        ctx.tests.append(test)
    record.done.append(chunk.key)
    ctx.checkpoint()


def _to_tests(
    ctx: Context,
    chunk: Chunk,
    labels: dict[str, Rule],
    names: list[str],
    cases: list[Any],
    generation: int,
) -> list[Test]:
    record = ctx.stage(STAGE)
    tests = []
    for case in cases:
        rule = labels.get(case.rule.strip().upper().rstrip("."))
        if rule is None and len(labels) == 1:
            rule = next(iter(labels.values()))
        if rule is None:
            _count(record.counts, "unknown_rule_dropped")
            continue
        inputs, repaired = complete_inputs(ctx.prompt, case_inputs(case), names)
        if inputs is None:
            _count(record.counts, "missing_input_dropped")
            continue
        if repaired:
            _count(record.counts, "missing_input_repaired")
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


def _count(counts: dict[str, int], key: str) -> None:
    counts[key] = counts.get(key, 0) + 1
