"""Score every run: built-in judges, custom metrics (each on every eval model), checks.

Per cell, each judge's verdict is kept (`ctx.metric_results`) and summarised on the run
(`TestRun.metrics`): the average score, and an outcome. A scored metric passes at 50;
an ok/err metric is ok only when every judge that answered says ok, so a split
verdict shows up as err for a person to look at.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import mean

from promptgen.checks.judges import judge, judge_values
from promptgen.checks.metrics import Metric, fill_placeholders, load_metrics
from promptgen.checks.parse import parse_check
from promptgen.context import Context
from promptgen.llm import LLM, bounded_gather
from promptgen.options import Options
from promptgen.results import MetricResult, MetricSummary, Outcome, Test, TestRun
from promptgen.stages.invoke import test_arguments
from promptgen.stages.select import eval_tests

Item = tuple[TestRun, Test, Metric, str | None]


def output_metrics(ctx: Context, options: Options) -> list[Metric]:
    return [m for m in load_metrics(ctx.prompt, options) if not m.groundtruth]


def judges(llm: LLM, options: Options) -> list[str]:
    return list(dict.fromkeys(llm.settings.resolve(m) for m in options.eval_models or ["eval"]))


def plan(ctx: Context, options: Options, judge_models: list[str]) -> list[Item]:
    """(run, test, metric, judge) items still without a verdict."""
    tests = {t.id: t for t in eval_tests(ctx, options)}
    have = {r.key for r in ctx.metric_results if r.error is None}
    metrics = output_metrics(ctx, options)
    items: list[Item] = []
    for run in ctx.test_runs:
        test = tests.get(run.test_id)
        if test is None or not run.ok:
            continue
        for metric in metrics:
            if metric.info.kind == "accuracy" and test.groundtruth_status != "ok":
                continue  # no accepted groundtruth: accuracy is not defined (docs/metrics.md)
            for who in [None] if metric.check is not None else judge_models:
                if (run.test_id, run.model, run.run_index, metric.name, who) not in have:
                    items.append((run, test, metric, who))
    return items


def complete(ctx: Context, options: Options, judge_models: list[str]) -> bool:
    return not plan(ctx, options, judge_models)


async def run(ctx: Context, llm: LLM, options: Options) -> Context:
    judge_models = judges(llm, options)
    metrics = output_metrics(ctx, options)
    known = {m.name: m for m in ctx.metrics}
    ctx.metrics = list({**known, **{m.name: m.info for m in metrics}}.values())
    items = plan(ctx, options, judge_models)
    retried = {_result(i).key for i in items}  # failed verdicts about to be asked again
    ctx.metric_results = [r for r in ctx.metric_results if r.key not in retried]
    checks = [i for i in items if i[2].check is not None]
    calls = [i for i in items if i[2].check is None]
    for item in checks:
        _store(ctx, item, _check(ctx, item))
    await bounded_gather([lambda i=i: _judge(ctx, llm, i) for i in calls])
    summarise(ctx)
    errors = [r for r in ctx.metric_results if r.error is not None]
    record = ctx.stage("metrics")
    record.counts = {"verdicts": len(ctx.metric_results) - len(errors), "failed": len(errors)}
    record.error = (
        f"{len(errors)} judgement(s) failed, e.g. {errors[0].error}; a re-run asks again"
        if errors
        else None
    )
    return ctx


@dataclass
class Scorer:
    """Judges runs as they finish. The runs stage scores each cell at once, so judging
    overlaps the other cells' calls instead of waiting for the slowest one; the metrics
    stage then scores what is left (accuracy once the groundtruth is in, failures)."""

    ctx: Context
    llm: LLM
    metrics: list[Metric]
    judges: list[str]
    tests: dict[str, Test]

    @classmethod
    def build(cls, ctx: Context, llm: LLM, options: Options) -> Scorer:
        tests = {t.id: t for t in eval_tests(ctx, options)}
        return cls(ctx, llm, output_metrics(ctx, options), judges(llm, options), tests)

    async def score(self, run: TestRun) -> None:
        """Every verdict of a run that has none yet (a new or re-run cell)."""
        test = self.tests.get(run.test_id)
        if test is None or not run.ok:
            return
        items: list[Item] = [
            (run, test, metric, who)
            for metric in self.metrics
            if metric.info.kind != "accuracy" or test.groundtruth_status == "ok"
            for who in ([None] if metric.check is not None else self.judges)
        ]
        for item in (i for i in items if i[2].check is not None):
            _store(self.ctx, item, _check(self.ctx, item))
        calls = [i for i in items if i[2].check is None]
        await bounded_gather([lambda i=i: _judge(self.ctx, self.llm, i) for i in calls])


def _check(ctx: Context, item: Item) -> MetricResult:
    run, test, metric, _ = item
    check = metric.check
    if metric.spec is not None:  # values that name the test's inputs, e.g. {{expected}}
        values = test_arguments(ctx.prompt, test)
        sample = next((s for s in ctx.prompt.test_samples if s.inputs == test.inputs), None)
        if sample is not None and sample.expected is not None:
            values.setdefault("expected", sample.expected)
        spec, missing = fill_placeholders(metric.spec, values)
        if missing:
            reason = f"the check needs {{{{{missing[0]}}}}}, which this test does not give"
            return _result(item, outcome="unknown", reason=reason)
        check = parse_check(spec)
    result = check.evaluate(run.output or "")
    score = result.score if result.score is not None else (100.0 if result.passed else 0.0)
    return _result(
        item, score=score, outcome="ok" if result.passed else "err", reason=result.reason
    )


async def _judge(ctx: Context, llm: LLM, item: Item) -> None:
    run, test, metric, who = item
    assert who is not None
    values = judge_values(ctx, test, run.output or "", test.groundtruth)
    verdict = await judge(llm, metric, who, values, stage="metrics")
    _store(
        ctx,
        item,
        _result(
            item,
            score=verdict.score,
            outcome=verdict.outcome,
            reason=verdict.reason,
            error=verdict.error,
        ),
    )
    ctx.checkpoint()


def _result(item: Item, **fields: object) -> MetricResult:
    run, _, metric, who = item
    return MetricResult(
        test_id=run.test_id,
        model=run.model,
        run_index=run.run_index,
        metric=metric.name,
        judge=who,
        **fields,  # type: ignore[arg-type]
    )


def _store(ctx: Context, item: Item, result: MetricResult) -> None:
    ctx.metric_results.append(result)


def summarise(ctx: Context) -> None:
    """Recompute every run's per-metric summary from the individual verdicts."""
    scorers = {m.name for m in ctx.metrics if m.scorer}
    grouped: dict[tuple[str, str, int], dict[str, list[MetricResult]]] = {}
    for result in ctx.metric_results:
        key = (result.test_id, result.model, result.run_index)
        grouped.setdefault(key, {}).setdefault(result.metric, []).append(result)
    for run in ctx.test_runs:
        run.metrics = {
            name: summary(results, name in scorers)
            for name, results in grouped.get(run.key, {}).items()
        }


def summary(results: list[MetricResult], scorer: bool) -> MetricSummary:
    answered = [r for r in results if r.error is None and r.outcome != "unknown"]
    scores = [r.score for r in answered if r.score is not None]
    average = mean(scores) if scores else None
    outcome: Outcome = "unknown"
    if answered:
        if scorer:
            outcome = "ok" if average is not None and average >= 50 else "err"
        else:
            outcome = "ok" if all(r.outcome == "ok" for r in answered) else "err"
    return MetricSummary(
        score=average,
        outcome=outcome,
        judges=len(answered),
        errors=sum(r.error is not None for r in results),
    )
