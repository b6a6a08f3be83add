"""Groundtruth: a groundtruth model answers each test; eval models score the answer.

One rule (docs/metrics.md): an answer is accepted when the average of its scores
reaches `groundtruthThreshold`. Below it, the test is asked again with a fresh variant
(a new call, never a cached answer) up to `groundtruthRetries` more times. A test
that never reaches the threshold keeps its best-scoring answer, marked `invalid`, and
gets no accuracy score. PromptPex retried below 80 but rejected below 50, and its
retries could come back from its own cache. An answer that is empty or cut off at the
token limit is a failed call, not an answer: it is never scored or accepted, and a
re-run asks that attempt again.

A test sample with an expected output needs no groundtruth model: the author's output is
its reference (status `author`, no call); the model answers only the other tests.
"""

from __future__ import annotations

import asyncio
from statistics import mean

from promptgen.config import RunConfig
from promptgen.context import Context
from promptgen.evaluation import make_case
from promptgen.prompting.invoke import call_settings
from promptgen.results import GroundtruthAttempt, Test
from promptgen.selection import author_reference, eval_tests
from promptgen.stage import TEST_SET, Projection, Scope, WorkItem
from promptgen.stages.runs import run_test

requires = ("rules", *TEST_SET)
phase = "evaluation"


def enabled(cfg: RunConfig) -> bool:
    return cfg.with_groundtruth


def rounds(cfg: RunConfig) -> int:
    """An answer, then its scores."""
    return 2


def todo(ctx: Context, cfg: RunConfig) -> list[WorkItem]:
    tests = [t for t in eval_tests(ctx, cfg) if t.groundtruth_status is None]
    calls = 1 + len(cfg.groundtruth_judges) * len(cfg.groundtruth_metrics)
    return [
        WorkItem(t.id, t, 0 if author_reference(ctx.prompt, t) is not None else calls)
        for t in tests
    ]


def estimate(ctx: Context, cfg: RunConfig, projection: Projection) -> int:
    calls = 1 + len(cfg.groundtruth_judges) * len(cfg.groundtruth_metrics)
    if projection.test_set_known:
        return sum(i.calls for i in todo(ctx, cfg))
    return projection.eval_tests_of(ctx, cfg) * calls


async def run(item: WorkItem, scope: Scope) -> None:
    ctx, cfg = scope.ctx, scope.cfg
    test: Test = item.data
    given = author_reference(ctx.prompt, test)
    if given is not None:
        test.groundtruth, test.groundtruth_model, test.groundtruth_score = given, None, None
        test.groundtruth_status = "author"
        scope.checkpoint()
        return
    settings = call_settings(ctx.prompt, cfg.ev)
    model = cfg.groundtruth_model
    while True:
        scored = [a for a in ctx.groundtruth if a.test_id == test.id and a.average is not None]
        best = max(scored, key=lambda a: a.average or 0.0, default=None)
        if best is not None and (best.accepted or len(scored) > cfg.ev.groundtruth_retries):
            _settle(test, best)
            return
        attempt = len(scored)  # variant = attempt: each retry is a new call
        answer = await run_test(
            ctx.prompt, scope.llm, settings, test, model, attempt, "groundtruth"
        )
        record = GroundtruthAttempt(
            test_id=test.id, attempt=attempt, model=model, output=answer.output
        )
        ctx.groundtruth = [
            a for a in ctx.groundtruth if not (a.test_id == test.id and a.attempt == attempt)
        ]
        ctx.groundtruth.append(record)
        if not answer.ok or answer.output is None:  # failed, empty or cut off
            record.error = answer.error or "empty answer"
            scope.fail(record.error)
            return  # the test stays unsettled; a re-run asks this attempt again
        await _score(scope, test, record, answer.output)
        if record.error is not None:
            scope.fail(record.error)
            return
        scope.checkpoint()


async def _score(scope: Scope, test: Test, record: GroundtruthAttempt, output: str) -> None:
    """Every groundtruth metric on every groundtruth judge; scores averaged per judge."""
    cfg = scope.cfg
    pairs = [(who, m) for who in cfg.groundtruth_judges for m in cfg.groundtruth_metrics]

    async def one(who: str, metric):  # type: ignore[no-untyped-def]
        case = make_case(scope.ctx, test, output, judge=who, llm=scope.llm, stage="groundtruth")
        return await metric.evaluate(case)

    verdicts = await asyncio.gather(*(one(who, m) for who, m in pairs))
    for who in cfg.groundtruth_judges:
        mine = [v for (w, _), v in zip(pairs, verdicts, strict=True) if w == who]
        points = [v.score for v in mine if v.score is not None]
        if points:
            record.scores[who] = mean(points)
            record.reasons[who] = next((v.reason for v in mine if v.reason), "")
        elif mine[0].error:
            record.reasons[who] = mine[0].error
    if not record.scores:
        record.error = "no eval model could score the answer"
        return
    record.average = mean(record.scores.values())
    record.accepted = record.average >= cfg.ev.groundtruth_threshold


def _settle(test: Test, best: GroundtruthAttempt) -> None:
    test.groundtruth = best.output
    test.groundtruth_model = best.model
    test.groundtruth_score = best.average
    test.groundtruth_status = "ok" if best.accepted else "invalid"
