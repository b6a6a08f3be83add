"""Groundtruth: a groundtruth model answers each test; eval models score the answer.

One rule (docs/metrics.md): an answer is accepted when the average of its scores
reaches `groundtruthThreshold`. Below it, the test is asked again with a fresh variant
(a new call, never a cached answer) up to `groundtruthRetries` more times. A test
that never reaches the threshold keeps its best-scoring answer, marked `invalid`, and
gets no accuracy score. PromptPex retried below 80 but rejected below 50, and its
retries could come back from its own cache.
"""

from __future__ import annotations

import asyncio
from statistics import mean

from promptgen.checks.judges import judge, judge_values
from promptgen.checks.metrics import Metric, load_metrics
from promptgen.context import Context
from promptgen.llm import LLM, bounded_gather
from promptgen.options import Options
from promptgen.results import GroundtruthAttempt, MetricInfo, Test
from promptgen.stages.invoke import CallSettings, call_settings
from promptgen.stages.runs import run_test
from promptgen.stages.select import eval_tests

BUILTIN = Metric(MetricInfo(name="groundtruth", kind="groundtruth", scorer=True))


def scorers(ctx: Context, options: Options) -> list[Metric]:
    """Metrics tagged `groundtruth` score the answers; without any, the built-in judge."""
    tagged = [m for m in load_metrics(ctx.prompt, options) if m.groundtruth]
    return tagged or [BUILTIN]


def todo(ctx: Context, options: Options) -> list[Test]:
    return [t for t in eval_tests(ctx, options) if t.groundtruth_status is None]


def complete(ctx: Context, options: Options) -> bool:
    return not todo(ctx, options)


async def run(ctx: Context, llm: LLM, options: Options) -> Context:
    model = llm.settings.resolve(options.groundtruth_model or "groundtruth")
    names = options.groundtruth_eval_models or options.eval_models or ["eval"]
    judge_models = list(dict.fromkeys(llm.settings.resolve(m) for m in names))
    settings = call_settings(ctx.prompt, options)
    metrics = scorers(ctx, options)
    work = todo(ctx, options)
    await bounded_gather(
        [
            lambda t=t: _test(ctx, llm, options, settings, t, model, judge_models, metrics)
            for t in work
        ]
    )
    tests = eval_tests(ctx, options)
    record = ctx.stage("groundtruth")
    record.counts = {
        "accepted": sum(t.groundtruth_status == "ok" for t in tests),
        "invalid": sum(t.groundtruth_status == "invalid" for t in tests),
        "attempts": sum(a.average is not None for a in ctx.groundtruth),
    }
    missing = len(todo(ctx, options))
    record.error = (
        f"{missing} test(s) without a scored answer; a re-run asks again" if missing else None
    )
    return ctx


async def _test(
    ctx: Context,
    llm: LLM,
    options: Options,
    settings: CallSettings,
    test: Test,
    model: str,
    judge_models: list[str],
    metrics: list[Metric],
) -> None:
    while True:
        scored = [a for a in ctx.groundtruth if a.test_id == test.id and a.average is not None]
        best = max(scored, key=lambda a: a.average or 0.0, default=None)
        if best is not None and (best.accepted or len(scored) > options.groundtruth_retries):
            _settle(test, best)
            ctx.checkpoint()
            return
        attempt = len(scored)  # variant = attempt: each retry is a new call
        answer = await run_test(ctx, llm, settings, test, model, attempt, stage="groundtruth")
        output = answer.output
        record = GroundtruthAttempt(test_id=test.id, attempt=attempt, model=model, output=output)
        ctx.groundtruth = [
            a for a in ctx.groundtruth if not (a.test_id == test.id and a.attempt == attempt)
        ]
        ctx.groundtruth.append(record)
        if not answer.ok or output is None:
            record.error = answer.error or "empty answer"
            return  # the stage stays unfinished; a re-run asks this attempt again
        values = judge_values(ctx, test, output, None)
        pairs = [(who, m) for who in judge_models for m in metrics]
        verdicts = await asyncio.gather(
            *(judge(llm, m, who, values, stage="groundtruth") for who, m in pairs)
        )
        for who in judge_models:
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
        record.accepted = record.average >= options.groundtruth_threshold
        ctx.checkpoint()


def _settle(test: Test, best: GroundtruthAttempt) -> None:
    test.groundtruth = best.output
    test.groundtruth_model = best.model
    test.groundtruth_score = best.average
    test.groundtruth_status = "ok" if best.accepted else "invalid"
