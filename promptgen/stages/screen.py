"""Screen: the safety judge on the test inputs, in numbered batches.

Every test a model wrote (generated, expanded, baseline) is judged safe, injection or
harmful; a flagged test stays in the test set, marked, and the evaluation leaves it out
unless keepUnsafe. The author's own samples are not screened: they come with the
prompt (and red-team corpora such as LVE are adversarial on purpose). An item an
answer leaves out goes into a new, smaller batch.
"""

from __future__ import annotations

import json

from promptgen.config import RunConfig
from promptgen.context import Context
from promptgen.prompting import stage_messages
from promptgen.prompting.per_item import answers, numbered_model
from promptgen.prompting.safety import SafetyAnswer
from promptgen.results import Test, content_id
from promptgen.stage import Projection, Scope, WorkItem

requires = ("tests",)
# Expanded and baseline tests are screened too, in the same round as validity.
after = ("expand", "baseline")
phase = "generation"
# Inputs judged per call: one call per test would double the cost of a small run; a
# handful per call keeps each verdict focused.
BATCH = 8


def enabled(cfg: RunConfig) -> bool:
    return cfg.gen.safety and cfg.generating


def unscreened(ctx: Context) -> list[Test]:
    return [t for t in ctx.tests if t.safety is None and t.origin != "sample"]


def todo(ctx: Context, cfg: RunConfig) -> list[WorkItem]:
    """Unscreened tests in batches; a test left without a verdict goes into a new batch."""
    left = unscreened(ctx)
    batches = [left[i : i + BATCH] for i in range(0, len(left), BATCH)]
    return [WorkItem(content_id("screen", [t.id for t in b]), b) for b in batches]


def estimate(ctx: Context, cfg: RunConfig, projection: Projection) -> int:
    if {"tests", *after} <= projection.complete:
        return len(todo(ctx, cfg))
    return -(-projection.tests // BATCH)


async def run(item: WorkItem, scope: Scope) -> None:
    tests: list[Test] = item.data
    shown = "\n".join(
        f"{i}. {json.dumps(t.inputs, ensure_ascii=False)}" for i, t in enumerate(tests, start=1)
    )
    messages = stage_messages("screen", intent=scope.ctx.intent or "", tests=shown)
    answer = numbered_model("Screening", len(tests), SafetyAnswer)
    result = await scope.complete(messages, model="eval", output=answer)
    if not result.ok:
        scope.fail(result.error)
        return
    for number, verdict in answers(result.parsed).items():
        test = tests[number - 1]
        test.safety, test.safety_reason = verdict.verdict, verdict.reason.strip()
    missing = sum(t.safety is None for t in tests)
    if missing:
        scope.fail(f"{missing} test(s) got no verdict; a re-run asks again")
    for label in ("safe", "injection", "harmful"):
        scope.set_count(label, sum(t.safety == label for t in scope.ctx.tests))
