"""Stage order, skip-if-done, checkpoints, concurrency and progress for a generation run."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from promptgen.context import Context
from promptgen.llm import LLM
from promptgen.options import Options
from promptgen.plan import planned_calls
from promptgen.progress import Reporter
from promptgen.stages import (
    analysis,
    baseline,
    expand,
    generate,
    groundtruth,
    judge,
    metrics,
    review,
    runs,
)

SAVE_INTERVAL = 0.5
StageFn = Callable[[Context, LLM, Options], Awaitable[Context]]


@dataclass(frozen=True)
class Stage:
    name: str
    fn: StageFn
    enabled: Callable[[Options], bool]
    complete: Callable[[Context, Options], bool]
    requires: tuple[str, ...] = ()


def _always(options: Options) -> bool:
    return True


def _generating(options: Options) -> bool:
    """`--tests FILE` evaluates the given tests and generates none."""
    return not options.test_ids


def _evaluating(options: Options) -> bool:
    return options.evals and bool(options.models)


# What an evaluation stage waits for (those of them that are enabled).
_TEST_SET = ("tests", "baseline", "expand", "validity")


STAGES: dict[str, Stage] = {
    s.name: s
    for s in (
        Stage("intent", analysis.intent, _always, lambda c, o: c.intent is not None),
        Stage("input_spec", analysis.input_spec, _always, lambda c, o: c.input_spec is not None),
        Stage(
            "rules",
            analysis.output_rules,
            _always,
            lambda c, o: "rules" in c.stage("rules").counts,
        ),
        Stage(
            "inverse_rules",
            analysis.inverse_rules,
            _always,
            lambda c, o: "inverse_rules" in c.stage("inverse_rules").counts,
            ("rules",),
        ),
        Stage(
            "groundedness",
            judge.groundedness,
            lambda o: o.groundedness,
            lambda c, o: all(r.grounded is not None for r in c.rules),
            ("rules",),
        ),
        Stage(
            "tests",
            generate.run,
            _generating,
            lambda c, o: (
                "samples" in c.stage("tests").done
                and all(ch.key in c.stage("tests").done for ch in generate.plan_chunks(c, o))
            ),
            ("intent", "input_spec", "rules", "inverse_rules"),
        ),
        Stage(
            "baseline",
            baseline.run,
            lambda o: o.baseline_tests and _generating(o),
            lambda c, o: len(c.stage("baseline").done) >= max(1, len(c.prompt.scenarios)),
            ("rules", "inverse_rules"),
        ),
        Stage(
            "expand",
            expand.run,
            lambda o: o.test_expansions > 0 and _generating(o),
            lambda c, o: c.stage("expand").counts.get("rounds") == o.test_expansions,
            ("tests",),
        ),
        Stage(
            "validity",
            judge.validity,
            lambda o: o.validity,
            lambda c, o: all(t.valid is not None for t in c.tests),
            ("input_spec", "tests"),
        ),
        Stage(
            "groundtruth",
            groundtruth.run,
            lambda o: o.evals and o.groundtruth,
            groundtruth.complete,
            ("rules", *_TEST_SET),
        ),
        Stage("runs", runs.run, _evaluating, runs.complete, _TEST_SET),
        Stage(
            "review",
            review.run,
            lambda o: o.rate_tests or o.filter_tests is not None,
            review.complete,
            ("intent", "rules", *_TEST_SET),
        ),
        Stage(
            "metrics",
            metrics.run,
            _evaluating,
            lambda c, o: metrics.complete(c, o, o.eval_models),
            # After runs and groundtruth (the order in _stages), finished or not: the
            # runs that did succeed are scored, and a re-run scores the rest.
            ("rules",),
        ),
    )
}


class Runner:
    """Runs the stages of one context, saving after every stage and batch."""

    def __init__(
        self,
        ctx: Context,
        llm: LLM,
        options: Options,
        reporter: Reporter,
        save: Callable[[Context], None],
    ) -> None:
        self.ctx, self.llm, self.options, self.reporter = ctx, llm, options, reporter
        self._save = save
        self._base_usage = ctx.usage.model_copy(deep=True)
        self._stage_base = {n: r.usage.model_copy() for n, r in ctx.stages.items()}
        self._last_save = 0.0
        self.planned = planned_calls(ctx, options)
        ctx._checkpoint = self.checkpoint

    def checkpoint(self) -> None:
        """A save inside a stage, at most every SAVE_INTERVAL seconds: a context of a few
        thousand tests takes milliseconds to write. Answers finished since the last save
        are in the response cache, so a resumed run gets them back without a call."""
        if time.perf_counter() - self._last_save >= SAVE_INTERVAL:
            self.save()

    def save(self) -> None:
        self._last_save = time.perf_counter()
        self.ctx.usage = self._base_usage + self.llm.usage.totals
        for name, record in self.ctx.stages.items():
            current = self.llm.usage.totals.by_stage.get(name)
            if current is not None:
                base = self._stage_base.get(name)
                record.usage = base + current if base else current.model_copy()
                record.calls_done = record.usage.calls
        self._save(self.ctx)

    async def stage(self, name: str) -> None:
        spec = STAGES[name]
        if not spec.enabled(self.options):
            return
        record = self.ctx.stage(name)
        if record.status == "done" and spec.complete(self.ctx, self.options):
            return
        missing = [
            r
            for r in spec.requires
            if STAGES[r].enabled(self.options) and self.ctx.stage(r).status != "done"
        ]
        if missing:
            record.status = "skipped"
            record.error = f"waits for {', '.join(missing)} (not finished)"
            self.reporter.stage_finished(record)
            return
        record.calls_planned = self.planned.get(name)
        record.status, record.error = "running", None
        record.started_at = datetime.now(UTC)
        started = time.perf_counter()
        try:
            await spec.fn(self.ctx, self.llm, self.options)
        finally:
            record.finished_at = datetime.now(UTC)
            record.duration_s = time.perf_counter() - started
            record.status = "done" if spec.complete(self.ctx, self.options) else "failed"
            self.save()
            self.reporter.stage_finished(record)

    async def run(self) -> Context:
        poller = asyncio.create_task(self._poll())
        try:
            await self._stages()
        finally:
            poller.cancel()
            self.reporter.update(self.llm.usage.totals.by_stage)
            self.save()
        return self.ctx

    async def _stages(self) -> None:
        async def rules_then_judged() -> None:
            await self.stage("rules")
            await asyncio.gather(self.stage("inverse_rules"), self.stage("groundedness"))

        await asyncio.gather(self.stage("intent"), self.stage("input_spec"), rules_then_judged())
        await asyncio.gather(self.stage("tests"), self.stage("baseline"))
        # Expanded tests need validity too, so validity judges everything in one round
        # after expansion (judging early would not shorten the critical path).
        await self.stage("expand")
        await self.stage("validity")
        # Groundtruth, the runs and the review need only the test set; the metrics need
        # the runs and (for accuracy) the groundtruth.
        await asyncio.gather(self.stage("groundtruth"), self.stage("runs"), self.stage("review"))
        await self.stage("metrics")

    async def _poll(self) -> None:
        while True:
            self.reporter.update(self.llm.usage.totals.by_stage)
            await asyncio.sleep(0.2)


def failed_stages(ctx: Context, options: Options) -> list[str]:
    """Enabled stages a re-run still has to finish."""
    return [
        n
        for n, r in ctx.stages.items()
        if r.status in ("failed", "skipped", "running") and STAGES[n].enabled(options)
    ]
