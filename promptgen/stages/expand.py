"""Expansion: rounds that make generated tests harder, each re-deriving the expected
output. Round r of a test is a unit of its own; it becomes possible once round r-1 of
that test is done, so a resumed run picks up each chain where it stopped."""

from __future__ import annotations

from typing import Any

from promptgen.config import RunConfig
from promptgen.context import Context
from promptgen.prompting import (
    fixed_text,
    generated_inputs,
    instruction,
    stage_messages,
    writer_view,
)
from promptgen.prompting.cases import case_inputs, case_model, complete_inputs, shown
from promptgen.prompting.input_checks import InputIndex, kind_of, problem
from promptgen.prompting.writing import echoes
from promptgen.results import Test
from promptgen.stage import Projection, Scope, WorkItem, sort_tests

requires = ("tests",)
phase = "generation"


def enabled(cfg: RunConfig) -> bool:
    return cfg.gen.test_expansions > 0 and cfg.generating


def rounds(cfg: RunConfig) -> int:
    return cfg.gen.test_expansions


def todo(ctx: Context, cfg: RunConfig) -> list[WorkItem[tuple[Test, int]]]:
    """For each generated test, the next round of its chain that is not done."""
    done = set(ctx.stage("expand").done)
    by_parent = {t.parent_id: t for t in ctx.tests if t.origin == "expanded"}
    items = []
    for root in (t for t in ctx.tests if t.origin == "generated"):
        current: Test | None = root
        for round_ in range(1, cfg.gen.test_expansions + 1):
            assert current is not None
            key = f"{current.id}:{round_}"
            if key not in done:
                items.append(WorkItem(key, (current, round_)))
                break
            current = by_parent.get(current.id)
            if current is None:  # done, but the expansion was a duplicate: chain ends
                break
    return items


def estimate(ctx: Context, cfg: RunConfig, projection: Projection) -> int:
    rounds = cfg.gen.test_expansions
    if "tests" in projection.complete:
        done = len(ctx.stage("expand").done)
        calls = projection.generated * rounds - done
    else:
        calls = projection.generated * rounds
    projection.tests += projection.generated * rounds
    return max(calls, 0)


async def run(item: WorkItem[tuple[Test, int]], scope: Scope) -> None:
    ctx, gen = scope.ctx, scope.cfg.gen
    test, _round = item.data
    rule = ctx.rule(test.rule_id)
    fixed = set(next((s.parameters for s in ctx.prompt.scenarios if s.name == test.scenario), {}))
    names = generated_inputs(ctx.prompt, fixed)
    messages = stage_messages(
        "expand",
        prompt=writer_view(ctx.prompt),
        rule=rule.text if rule else "",
        test=shown(test),
        input_spec=ctx.input_spec,
        fixed=fixed_text(ctx.prompt),
        instructions=instruction(ctx.prompt, gen.instructions, "test_expansion"),
    )
    result = await scope.complete(
        messages, model="rules", output=case_model(ctx.prompt, names), temperature=gen.temperature
    )
    if not result.ok:
        scope.fail(result.error)
        return
    scope.done()
    parsed: Any = result.parsed  # a model built at run time: mypy knows none of its fields
    written = case_inputs(parsed)
    inputs, _ = complete_inputs(ctx.prompt, written, names, repair=False)
    # Against the tests that were there before expansion began (generated, baseline,
    # samples); another chain's expansion, made before or after this one, is met in
    # `_keep`, which keeps the one whose parent sorts first.
    others = [
        t.inputs
        for t in ctx.tests
        if t.origin != "expanded" and (t.scenario == test.scenario or t.origin == "sample")
    ]
    why = problem(written, ctx.prompt, names, others=others) if inputs is not None else "empty"
    if inputs is None or why is not None:
        # Not a valid new test (an input left out, template syntax, the parent again):
        # the chain ends here, and the stage says how many ended so.
        scope.count("invalid_dropped")
        scope.count(f"dropped_{kind_of(why or 'is empty')}")
        return
    new_id = Test.make_id("expanded", test.rule_id, test.scenario, inputs)
    dictated = next(
        (
            b.expected_output
            for b in ctx.behaviours
            if b.id in test.behaviours and b.expected_output
        ),
        None,
    )
    expected = dictated or parsed.expected_output
    if dictated is None and expected and echoes(expected, inputs):
        expected = None
    expanded = Test(
        id=new_id,
        rule_id=test.rule_id,
        inverse=test.inverse,
        scenario=test.scenario,
        inputs=inputs,
        expected_output=expected,  # recomputed for the new input (or the prompt's own)
        expected_class=test.expected_class,
        behaviours=list(test.behaviours),
        reasoning=parsed.reasoning,
        generation=test.generation,
        origin="expanded",
        parent_id=test.id,
        original_inputs=test.original_inputs or test.inputs,
    )
    if not _keep(ctx, expanded):
        return  # the same expansion twice: one is kept
    sort_tests(ctx)
    scope.set_count("expanded", sum(t.origin == "expanded" for t in ctx.tests))


def _keep(ctx: Context, test: Test) -> bool:
    """Add `test`; when another chain made the same expansion (or a near-duplicate of it),
    the one whose parent comes
    first in the (sorted) tests is kept, whichever call returned first. A round starts
    once the round before is in, so no chain has gone on from the one replaced."""
    position = {t.id: i for i, t in enumerate(ctx.tests)}
    same = position.get(test.id)
    if same is None:
        expansions = [
            i
            for i, t in enumerate(ctx.tests)
            if t.origin == "expanded" and t.scenario == test.scenario
        ]
        index = InputIndex([ctx.tests[i].inputs for i in expansions])
        found = index.find(test.inputs)
        same = expansions[found] if found is not None else None
    if same is None:
        ctx.tests.append(test)
        return True
    mine = position.get(test.parent_id or "", len(position))
    if mine >= position.get(ctx.tests[same].parent_id or "", len(position)):
        return False
    ctx.tests[same] = test
    return True
