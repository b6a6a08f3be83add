"""Score what the runs stage left unscored: accuracy once the groundtruth is in, verdicts
that failed, and runs of earlier invocations. Each unit is one verdict: a metric on a
run, from one judge (a check needs none). Summaries (`TestRun.metrics`) follow each
verdict as it is recorded (docs/metrics.md)."""

from __future__ import annotations

from promptgen.config import RunConfig
from promptgen.context import Context
from promptgen.evaluation.compiled import needed_for
from promptgen.evaluation.scoring import Needed, verdict
from promptgen.llm import batched
from promptgen.selection import eval_tests
from promptgen.stage import Projection, Scope, WorkItem

# Only the rules are needed; it runs after the runs and the groundtruth have had their
# turn, finished or not: the runs that did succeed are scored, a re-run scores the rest.
requires = ("rules",)
after = ("runs", "groundtruth")
phase = "evaluation"


def enabled(cfg: RunConfig) -> bool:
    return cfg.evaluating


def todo(ctx: Context, cfg: RunConfig) -> list[WorkItem[Needed]]:
    """Verdicts still missing (never asked, or failed) for the runs of the tests chosen."""
    tests = {t.id: t for t in eval_tests(ctx, cfg)}
    have = {r.key for r in ctx.metric_results if r.error is None}
    return [
        WorkItem("|".join("-" if k is None else str(k) for k in item.key), item, item.calls)
        for run in ctx.test_runs
        if run.test_id in tests
        for item in needed_for(ctx, cfg, run, tests[run.test_id], have)
        if item.key not in have
    ]


def estimate(ctx: Context, cfg: RunConfig, projection: Projection) -> int:
    """Streamed judgements are booked here too: every cell × judged metric × judge."""
    judged = sum(m.judged and not m.needs_groundtruth for m in cfg.output_metrics)
    accuracy = sum(m.needs_groundtruth for m in cfg.output_metrics)
    models = set(cfg.models)
    have = sum(
        r.error is None and r.judge is not None and r.model in models for r in ctx.metric_results
    )
    expected = projection.cells * len(cfg.judges) * (judged + accuracy)
    return max(expected - have, len([i for i in todo(ctx, cfg) if i.calls]))


async def run(item: WorkItem[Needed], scope: Scope) -> None:
    with batched(item.key):  # with --batch: one line of a provider batch
        result = await verdict(scope.ctx, scope.llm, item.data)
    scope.ctx.record_verdicts([result], item.data.run)
    if item.data.judge is not None:
        scope.note(f"batch|{item.data.judge}", scope.llm.batch_note(item.data.judge))
    if result.error is not None:
        scope.fail(result.error)
