"""Which verdicts a run needs, and getting them: checks at once, judges concurrently."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING

from promptgen.context import Context
from promptgen.evaluation.case import make_case
from promptgen.evaluation.protocol import Metric
from promptgen.llm import bounded_gather
from promptgen.results import MetricResult, Test, TestRun

if TYPE_CHECKING:
    from promptgen.llm import LLM

VerdictKey = tuple[str, str, int, str, str | None]


class Needed:
    """One verdict a run needs: a metric, and the judge that gives it (None: a check)."""

    __slots__ = ("judge", "metric", "run", "test")

    def __init__(self, run: TestRun, test: Test, metric: Metric, judge: str | None) -> None:
        self.run, self.test, self.metric, self.judge = run, test, metric, judge

    @property
    def key(self) -> VerdictKey:
        run = self.run
        return (run.test_id, run.model, run.run_index, self.metric.name, self.judge)

    @property
    def calls(self) -> int:
        """Calls one verdict makes: a check none, a judge one (or what it declares)."""
        return getattr(self.metric, "calls", 1) if self.metric.judged else 0


def needed(
    run: TestRun, test: Test, metrics: Sequence[Metric], judges: Sequence[str]
) -> list[Needed]:
    """Every verdict a successful run needs: a check has no judge, and accuracy needs a
    reference, an accepted groundtruth or the author's expected output, and the class
    check an expected class (docs/metrics.md).
    A failed run needs none, and neither does a faulty one (an empty or cut-off reply is
    not an answer to judge)."""
    if not run.ok:
        return []
    return [
        Needed(run, test, metric, who)
        for metric in metrics
        if (not metric.needs_groundtruth or test.has_reference)
        and (not metric.needs_class or test.expected_class)
        for who in (judges if metric.judged else [None])
    ]


async def verdict(ctx: Context, llm: LLM, item: Needed, stage: str = "metrics") -> MetricResult:
    test, run = item.test, item.run
    case = make_case(
        ctx, test, run.output or "", judge=item.judge, llm=llm, stage=stage,
        groundtruth=test.groundtruth, steps=run.steps,
    )  # fmt: skip
    answer = await item.metric.evaluate(case)
    test_id, model, run_index, metric, judge = item.key
    return MetricResult(
        test_id=test_id,
        model=model,
        run_index=run_index,
        metric=metric,
        judge=judge,
        score=answer.score,
        outcome=answer.outcome,
        reason=answer.reason,
        error=answer.error,
    )


async def score(ctx: Context, llm: LLM, items: list[Needed]) -> list[MetricResult]:
    """Every verdict of `items`, recorded in the context as it arrives."""

    async def one(item: Needed) -> MetricResult:
        result = await verdict(ctx, llm, item)
        ctx.record_verdicts([result], item.run)
        return result

    return await bounded_gather([partial(one, i) for i in items])
