"""Groundedness: is each rule supported by the prompt? One call per rule."""

from __future__ import annotations

from pydantic import BaseModel

from promptgen.config import RunConfig
from promptgen.context import Context
from promptgen.prompting import prompt_text, stage_messages
from promptgen.prompting.bounded import Text
from promptgen.results import Rule
from promptgen.stage import Projection, Scope, WorkItem

requires = ("rules",)
phase = "generation"


class Grounded(BaseModel):
    # The reason (quoting the prompt) comes first: a small model decides better after it.
    reason: Text(400)  # type: ignore[valid-type]
    grounded: bool


def enabled(cfg: RunConfig) -> bool:
    return cfg.gen.groundedness and cfg.analysing


def todo(ctx: Context, cfg: RunConfig) -> list[WorkItem[Rule]]:
    return [WorkItem(r.id, r) for r in ctx.rules if r.grounded is None]


def estimate(ctx: Context, cfg: RunConfig, projection: Projection) -> int:
    return len(todo(ctx, cfg)) if ctx.rules else projection.rules


async def run(item: WorkItem[Rule], scope: Scope) -> None:
    rule = item.data
    messages = stage_messages("groundedness", prompt=prompt_text(scope.ctx.prompt), rule=rule.text)
    result = await scope.complete(messages, model="eval", output=Grounded)
    if not result.ok:
        scope.fail(result.error)
        return
    rule.grounded, rule.grounded_reason = result.parsed.grounded, result.parsed.reason
