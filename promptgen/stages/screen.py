"""Screen: the safety judge on the test inputs, in numbered batches.

Every test a model wrote (generated, expanded, baseline) is judged safe, injection or
harmful; a flagged test stays in the test set, marked, and the evaluation leaves it out
unless keepUnsafe. The author's own samples are not screened: they come with the
prompt (and red-team corpora such as LVE are adversarial on purpose). An item an
answer leaves out goes into a new, smaller batch.
"""

from __future__ import annotations

from promptgen.config import RunConfig
from promptgen.context import Context
from promptgen.prompting.safety import SafetyAnswer
from promptgen.results import Test
from promptgen.stage import Projection, Scope, WorkItem
from promptgen.stages._judged import batches, judge
from promptgen.stages._judged import estimate as judged_estimate

requires = ("tests",)
# Expanded and baseline tests are screened too, in the same round as validity.
after = ("expand", "baseline")
phase = "generation"
# Inputs judged per call: one call per test would double the cost of a small run; a
# handful per call keeps each verdict focused.
BATCH = 8


def enabled(cfg: RunConfig) -> bool:
    return cfg.safety and cfg.generating


def unscreened(ctx: Context) -> list[Test]:
    return [t for t in ctx.tests if t.safety is None and t.origin != "sample"]


def todo(ctx: Context, cfg: RunConfig) -> list[WorkItem[list[Test]]]:
    """Unscreened tests in batches; a test left without a verdict goes into a new batch."""
    return batches("screen", unscreened(ctx), BATCH)


def estimate(ctx: Context, cfg: RunConfig, projection: Projection) -> int:
    return judged_estimate(todo(ctx, cfg), {"tests", *after}, projection, BATCH)


def _record(test: Test, verdict: SafetyAnswer) -> None:
    test.safety, test.safety_reason = verdict.verdict, verdict.reason.strip()


async def run(item: WorkItem[list[Test]], scope: Scope) -> None:
    await judge(
        scope,
        item.data,
        prompt="screen",
        answer=("Screening", SafetyAnswer),
        record=_record,
        judged=lambda t: t.safety is not None,
        intent=scope.ctx.intent or "",
    )
    for label in ("safe", "injection", "harmful"):
        scope.set_count(label, sum(t.safety == label for t in scope.ctx.tests))
