"""Baseline tests: written from the prompt alone, no rules, as many as the generated ones."""

from __future__ import annotations

from promptgen.context import Context
from promptgen.llm import LLM, bounded_gather
from promptgen.model import Scenario
from promptgen.options import Options
from promptgen.results import Test
from promptgen.stages.cases import case_inputs, cases_model, complete_inputs
from promptgen.stages.common import generated_inputs, inputs_text, prompt_text, stage_messages
from promptgen.stages.generate import target_rules

STAGE = "baseline"


async def run(ctx: Context, llm: LLM, options: Options) -> Context:
    record = ctx.stage(STAGE)
    scenarios: list[Scenario | None] = list(ctx.prompt.scenarios) or [None]
    # As many as test generation asks for, so the two can run side by side.
    per = len(target_rules(ctx, options)) * options.tests_per_rule * options.test_generations
    per = max(per, 1)
    todo = [s for s in scenarios if (s.name if s else "-") not in record.done]
    await bounded_gather([lambda s=s: _scenario(ctx, llm, s, per) for s in todo])
    return ctx


async def _scenario(ctx: Context, llm: LLM, scenario: Scenario | None, count: int) -> None:
    record = ctx.stage(STAGE)
    names = generated_inputs(ctx.prompt, set(scenario.parameters) if scenario else None)
    messages = stage_messages(
        "baseline", prompt=prompt_text(ctx.prompt), inputs=inputs_text(ctx.prompt, names),
        count=count,
    )  # fmt: skip
    result = await llm.complete(
        messages, model="baseline", output=cases_model(names, with_rule=False), stage=STAGE,
        max_tokens=min(16000, 400 * count + 200),
    )  # fmt: skip
    if not result.ok:
        record.error = result.error
        return
    name = scenario.name if scenario else None
    known = {t.id for t in ctx.tests}
    for case in result.parsed.tests[:count]:
        inputs, _ = complete_inputs(ctx.prompt, case_inputs(case), names)
        if inputs is None:
            record.counts["missing_input_dropped"] = (
                record.counts.get("missing_input_dropped", 0) + 1
            )
            continue
        test = Test(
            id=Test.make_id("baseline", None, name, inputs),
            scenario=name,
            inputs=inputs,
            expected_output=case.expected_output,
            reasoning=case.reasoning,
            origin="baseline",
        )
        if test.id not in known:
            known.add(test.id)
            ctx.tests.append(test)
    record.done.append(name or "-")
    ctx.checkpoint()
