"""Validity: does each test's input meet the input specification? Judged in batches."""

from __future__ import annotations

import json

from pydantic import BaseModel

from promptgen.config import RunConfig
from promptgen.context import Context
from promptgen.prompting import stage_messages
from promptgen.prompting.bounded import Text
from promptgen.prompting.per_item import answers, numbered_model
from promptgen.results import Test, content_id
from promptgen.stage import Projection, Scope, WorkItem

requires = ("input_spec", "tests")
# Expanded and baseline tests need validity too, so it judges everything in one round
# after them (judging early would not shorten the critical path).
after = ("expand", "baseline")
phase = "generation"
# Tests judged per call: one call per test costs a round trip and a copy of the
# specification each; a handful per call keeps each judgement focused.
BATCH = 8


class Verdict(BaseModel):
    valid: bool
    reason: Text(400)  # type: ignore[valid-type]


def enabled(cfg: RunConfig) -> bool:
    return cfg.gen.validity


def todo(ctx: Context, cfg: RunConfig) -> list[WorkItem]:
    """Unjudged tests in batches; a test left without a verdict goes into a new batch."""
    left = [t for t in ctx.tests if t.valid is None]
    batches = [left[i : i + BATCH] for i in range(0, len(left), BATCH)]
    return [WorkItem(content_id("validity", [t.id for t in b]), b) for b in batches]


def estimate(ctx: Context, cfg: RunConfig, projection: Projection) -> int:
    if {"tests", *after} <= projection.complete:
        return len(todo(ctx, cfg))
    return -(-projection.tests // BATCH)


async def run(item: WorkItem, scope: Scope) -> None:
    tests: list[Test] = item.data
    shown = "\n".join(
        f"{i}. {json.dumps(t.inputs, ensure_ascii=False)}" for i, t in enumerate(tests, start=1)
    )
    messages = stage_messages("validity", input_spec=scope.ctx.input_spec or "", tests=shown)
    answer = numbered_model("Verdicts", len(tests), Verdict)
    result = await scope.complete(messages, model="eval", output=answer)
    if not result.ok:
        scope.fail(result.error)
        return
    for number, verdict in answers(result.parsed).items():
        test = tests[number - 1]
        test.valid, test.validity_reason = verdict.valid, verdict.reason
    missing = sum(t.valid is None for t in tests)
    if missing:
        scope.fail(f"{missing} test(s) got no verdict; a re-run asks again")
    scope.set_count("valid", sum(t.valid is True for t in scope.ctx.tests))
    scope.set_count("invalid", sum(t.valid is False for t in scope.ctx.tests))
