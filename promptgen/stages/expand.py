"""Expansion: rounds that make generated tests harder, each re-deriving the expected output."""

from __future__ import annotations

from promptgen.context import Context
from promptgen.llm import LLM, bounded_gather
from promptgen.options import Options
from promptgen.results import Test
from promptgen.stages.cases import case_inputs, case_model, complete_inputs, shown
from promptgen.stages.common import generated_inputs, instruction, prompt_text, stage_messages

STAGE = "expand"


async def run(ctx: Context, llm: LLM, options: Options) -> Context:
    record = ctx.stage(STAGE)
    current = [t for t in ctx.tests if t.origin == "generated"]
    for round_ in range(1, options.test_expansions + 1):
        todo = [t for t in current if f"{t.id}:{round_}" not in record.done]
        await bounded_gather([lambda t=t, r=round_: _expand(ctx, llm, options, t, r) for t in todo])
        by_parent = {t.parent_id: t for t in ctx.tests if t.origin == "expanded"}
        current = [by_parent[t.id] for t in current if t.id in by_parent]
    if record.error is None:
        record.counts["rounds"] = options.test_expansions
    record.counts["expanded"] = sum(t.origin == "expanded" for t in ctx.tests)
    return ctx


async def _expand(ctx: Context, llm: LLM, options: Options, test: Test, round_: int) -> None:
    record = ctx.stage(STAGE)
    rule = ctx.rule(test.rule_id)
    fixed = set(next((s.parameters for s in ctx.prompt.scenarios if s.name == test.scenario), {}))
    names = generated_inputs(ctx.prompt, fixed)
    messages = stage_messages(
        "expand",
        prompt=prompt_text(ctx.prompt),
        rule=rule.text if rule else "",
        test=shown(test),
        input_spec=ctx.input_spec,
        instructions=instruction(ctx.prompt, options.instructions, "test_expansion"),
    )
    result = await llm.complete(
        messages, model="rules", output=case_model(names), temperature=options.temperature,
        stage=STAGE,
    )  # fmt: skip
    if not result.ok:
        record.error = result.error
        return
    inputs, _ = complete_inputs(ctx.prompt, case_inputs(result.parsed), names)
    if inputs is None:
        inputs = test.inputs
    new_id = Test.make_id("expanded", test.rule_id, test.scenario, inputs)
    record.done.append(f"{test.id}:{round_}")
    if any(t.id == new_id for t in ctx.tests):
        ctx.checkpoint()  # the same expansion twice: keep one
        return
    ctx.tests.append(
        Test(
            id=new_id,
            rule_id=test.rule_id,
            inverse=test.inverse,
            scenario=test.scenario,
            inputs=inputs,
            expected_output=result.parsed.expected_output,  # recomputed for the new input
            reasoning=result.parsed.reasoning,
            generation=test.generation,
            origin="expanded",
            parent_id=test.id,
            original_inputs=test.original_inputs or test.inputs,
        )
    )
    ctx.checkpoint()
