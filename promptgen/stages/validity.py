"""Validity: does each test's input meet the input specification? Judged in batches."""

from __future__ import annotations

from pydantic import BaseModel

from promptgen.config import RunConfig
from promptgen.context import Context
from promptgen.prompting.bounded import Text
from promptgen.results import Test
from promptgen.stage import Projection, Scope, WorkItem
from promptgen.stages._judged import batches, judge
from promptgen.stages._judged import estimate as judged_estimate

requires = ("input_spec", "tests")
# Expanded and baseline tests need validity too, so it judges everything in one round
# after them (judging early would not shorten the critical path).
after = ("expand", "baseline")
phase = "generation"
# Tests judged per call: one call per test costs a round trip and a copy of the
# specification each; a handful per call keeps each judgement focused. A small judge
# (the embedded 1.5B) gets one test a call: judging eight at once, its verdicts leaned
# on each other, and an unchanged haiku topic was valid beside one set of inputs and
# invalid beside another (1 of 9 valid against 7 of 9).
BATCH = 8


def batch(cfg: RunConfig) -> int:
    return 1 if cfg.small_judge else BATCH


class Verdict(BaseModel):
    valid: bool
    reason: Text(400)  # type: ignore[valid-type]


def enabled(cfg: RunConfig) -> bool:
    return cfg.gen.validity


def todo(ctx: Context, cfg: RunConfig) -> list[WorkItem[list[Test]]]:
    """Unjudged tests in batches; a test left without a verdict goes into a new batch."""
    return batches("validity", [t for t in ctx.tests if t.valid is None], batch(cfg))


def estimate(ctx: Context, cfg: RunConfig, projection: Projection) -> int:
    return judged_estimate(todo(ctx, cfg), {"tests", *after}, projection, batch(cfg))


def _record(test: Test, verdict: Verdict) -> None:
    test.valid, test.validity_reason = verdict.valid, verdict.reason


async def run(item: WorkItem[list[Test]], scope: Scope) -> None:
    await judge(
        scope,
        item.data,
        prompt="validity",
        answer=("Verdicts", Verdict),
        record=_record,
        judged=lambda t: t.valid is not None,
        input_spec=scope.ctx.input_spec or "",
    )
    edit = scope.ctx.edit
    if edit is not None and edit.tests_rechecked:  # kept tests judged against a new spec
        failed = {t.id for t in scope.ctx.tests if t.valid is False}
        edit.tests_flagged = [i for i in edit.tests_rechecked if i in failed]
    scope.set_count("valid", sum(t.valid is True for t in scope.ctx.tests))
    scope.set_count("invalid", sum(t.valid is False for t in scope.ctx.tests))
