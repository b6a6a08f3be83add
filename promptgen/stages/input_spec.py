"""Input specification: the constraints a valid input of the prompt meets."""

from __future__ import annotations

from promptgen.config import RunConfig
from promptgen.context import Context
from promptgen.prompting import fixed_text, inputs_text, instruction, samples_text
from promptgen.prompting.analysis import InputSpecAnswer, ShortInputSpecAnswer, analysis_messages
from promptgen.prompting.likeness import near_duplicate
from promptgen.stage import Scope, WorkItem

requires: tuple[str, ...] = ()
phase = "generation"


def enabled(cfg: RunConfig) -> bool:
    return cfg.analysing


def todo(ctx: Context, cfg: RunConfig) -> list[WorkItem[None]]:
    return [] if ctx.input_spec is not None else [WorkItem("input_spec")]


async def run(item: WorkItem[None], scope: Scope) -> None:
    ctx, gen = scope.ctx, scope.cfg.gen
    messages = analysis_messages(
        ctx.prompt,
        "input_spec",
        inputs=inputs_text(ctx.prompt),
        fixed=fixed_text(ctx.prompt),
        samples=samples_text(ctx.prompt, gen.test_samples_count, gen.test_samples_shuffle),
        instructions=instruction(ctx.prompt, gen.instructions, "input_spec"),
    )
    answer: type[InputSpecAnswer | ShortInputSpecAnswer] = (
        ShortInputSpecAnswer if scope.cfg.stepwise else InputSpecAnswer
    )
    result = await scope.complete(
        messages, model="rules", output=answer, temperature=gen.temperature
    )
    if not result.ok:
        scope.fail(result.error)
        return
    constraints: list[str] = []
    for said in (c.strip() for c in result.parsed.constraints):
        if said and not any(near_duplicate(said, c) for c in constraints):
            constraints.append(said)  # a constraint said twice is said once
    ctx.input_spec = "\n".join(f"- {c}" for c in constraints)
