"""Intent: one sentence saying what the prompt is for."""

from __future__ import annotations

from promptgen.config import RunConfig
from promptgen.context import Context
from promptgen.prompting import instruction
from promptgen.prompting.analysis import IntentAnswer, analysis_messages
from promptgen.stage import Projection, Scope, WorkItem

requires: tuple[str, ...] = ()
after: tuple[str, ...] = ()
phase = "generation"


def enabled(cfg: RunConfig) -> bool:
    return True


def todo(ctx: Context, cfg: RunConfig) -> list[WorkItem]:
    return [] if ctx.intent is not None else [WorkItem("intent")]


def estimate(ctx: Context, cfg: RunConfig, projection: Projection) -> int:
    return len(todo(ctx, cfg))


async def run(item: WorkItem, scope: Scope) -> None:
    ctx = scope.ctx
    messages = analysis_messages(
        ctx.prompt,
        "intent",
        instructions=instruction(ctx.prompt, scope.cfg.gen.instructions, "intent"),
    )
    result = await scope.complete(
        messages, model="rules", output=IntentAnswer, temperature=scope.cfg.gen.temperature
    )
    if not result.ok:
        scope.fail(result.error)
        return
    ctx.intent = result.parsed.task_description.strip()
