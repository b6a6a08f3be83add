"""Baseline tests: written from the prompt alone, no rules, as many as the generated ones."""

from __future__ import annotations

from promptgen.config import RunConfig
from promptgen.context import Context
from promptgen.model import Scenario
from promptgen.prompting import (
    fixed_text,
    generated_inputs,
    inputs_text,
    scenario_text,
    stage_messages,
    writer_view,
)
from promptgen.prompting.cases import case_inputs, cases_model, complete_inputs, numbered_cases
from promptgen.prompting.input_checks import kind_of, problem
from promptgen.prompting.writing import echoes
from promptgen.results import Test
from promptgen.stage import Projection, Scope, WorkItem, sort_tests
from promptgen.stages.tests import planned

requires = ("rules", "inverse_rules", "behaviours")
phase = "generation"


def enabled(cfg: RunConfig) -> bool:
    return cfg.gen.baseline_tests and cfg.generating


def _key(scenario: Scenario | None) -> str:
    return scenario.name if scenario else "-"


def todo(ctx: Context, cfg: RunConfig) -> list[WorkItem[Scenario | None]]:
    done = set(ctx.stage("baseline").done)
    scenarios: list[Scenario | None] = list(ctx.prompt.scenarios) or [None]
    return [WorkItem(_key(s), s) for s in scenarios if _key(s) not in done]


def estimate(ctx: Context, cfg: RunConfig, projection: Projection) -> int:
    projection.tests += projection.generated
    return len(todo(ctx, cfg))


async def run(item: WorkItem[Scenario | None], scope: Scope) -> None:
    ctx = scope.ctx
    scenario: Scenario | None = item.data
    # As many as test generation plans for a scenario, so the two can run side by side.
    count = max(1, len(planned(ctx, scope.cfg)))
    names = generated_inputs(ctx.prompt, set(scenario.parameters) if scenario else None)
    messages = stage_messages(
        "baseline", prompt=writer_view(ctx.prompt), inputs=inputs_text(ctx.prompt, names),
        count=count, scenario=scenario_text(scenario), fixed=fixed_text(ctx.prompt),
    )  # fmt: skip
    result = await scope.complete(
        messages, model="baseline", output=cases_model(ctx.prompt, names, None, count),
        max_tokens=min(16000, 400 * count + 200),
    )  # fmt: skip
    if not result.ok:
        scope.fail(result.error)
        return
    name = scenario.name if scenario else None
    known = {t.id for t in ctx.tests}
    others = [t.inputs for t in ctx.tests if t.scenario == name and t.origin == "baseline"]
    others += [t.inputs for t in ctx.tests if t.origin == "sample"]
    for case in numbered_cases(result.parsed):
        written = case_inputs(case)
        inputs, _ = complete_inputs(ctx.prompt, written, names, repair=False)
        why = problem(written, ctx.prompt, names, others=others) if inputs is not None else None
        if inputs is None:
            scope.count("missing_input_dropped")
            continue
        if why is not None:
            scope.count("invalid_dropped")
            scope.count(f"dropped_{kind_of(why)}")
            continue
        others.append(inputs)
        expected = case.expected_output
        test = Test(
            id=Test.make_id("baseline", None, name, inputs),
            scenario=name,
            inputs=inputs,
            expected_output=None if expected and echoes(expected, inputs) else expected,
            reasoning=case.reasoning,
            origin="baseline",
        )
        if test.id not in known:
            known.add(test.id)
            ctx.tests.append(test)
    sort_tests(ctx)
    scope.done()
