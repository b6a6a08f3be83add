"""Intent: one sentence saying what the prompt is for."""

from __future__ import annotations

from promptgen.config import RunConfig
from promptgen.context import Context
from promptgen.prompting import instruction
from promptgen.prompting.analysis import IntentAnswer, analysis_messages
from promptgen.stage import Scope, WorkItem

requires: tuple[str, ...] = ()
phase = "generation"


def enabled(cfg: RunConfig) -> bool:
    return cfg.analysing


def todo(ctx: Context, cfg: RunConfig) -> list[WorkItem[None]]:
    return [] if ctx.intent is not None else [WorkItem("intent")]


async def run(item: WorkItem[None], scope: Scope) -> None:
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
