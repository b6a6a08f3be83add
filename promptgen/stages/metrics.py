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


def items_of(run: TestRun, test: Test, metrics: list[Metric], judges: list[str]) -> list[Item]:
    """Every (run, test, metric, judge) verdict a successful run needs; a check has no
    judge, and accuracy needs an accepted groundtruth (docs/metrics.md)."""
    if not run.ok:
        return []
    return [
        (run, test, metric, who)
        for metric in metrics
        if metric.info.kind != "accuracy" or test.groundtruth_status == "ok"
        for who in ([None] if metric.check is not None else judges)
    ]


def plan(ctx: Context, options: Options, judge_models: list[str]) -> list[Item]:
    """The verdicts still missing (never asked, or failed)."""
    tests = {t.id: t for t in eval_tests(ctx, options)}
    have = {r.key for r in ctx.metric_results if r.error is None}
    metrics = output_metrics(ctx, options)
    return [
        item
        for run in ctx.test_runs
        if run.test_id in tests
        for item in items_of(run, tests[run.test_id], metrics, judge_models)
        if _key(item) not in have
    ]


def complete(ctx: Context, options: Options, judge_models: list[str]) -> bool:
    return not plan(ctx, options, judge_models)


async def run(ctx: Context, llm: LLM, options: Options) -> Context:
    judge_models = judges(llm, options)
    metrics = output_metrics(ctx, options)
    known = {m.name: m for m in ctx.metrics}
    ctx.metrics = list({**known, **{m.name: m.info for m in metrics}}.values())
    items = plan(ctx, options, judge_models)
    retried = {_key(i) for i in items}  # failed verdicts about to be asked again
    ctx.metric_results = [r for r in ctx.metric_results if r.key not in retried]
    await _verdicts(ctx, llm, items)
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
        if test is not None:
            await _verdicts(self.ctx, self.llm, items_of(run, test, self.metrics, self.judges))


async def _verdicts(ctx: Context, llm: LLM, items: list[Item]) -> None:
    """Checks at once (no call), then every judge call concurrently."""
    for item in items:
        if item[2].check is not None:
            ctx.metric_results.append(_check(ctx, item))
    calls = [i for i in items if i[2].check is None]
    await bounded_gather([lambda i=i: _judge(ctx, llm, i) for i in calls])


def _key(item: Item) -> tuple[str, str, int, str, str | None]:
    run, _, metric, who = item
    return (run.test_id, run.model, run.run_index, metric.name, who)


def _check(ctx: Context, item: Item) -> MetricResult:
    run, test, metric, _ = item
    check = metric.check
    if metric.spec is not None:  # values that name the test's inputs, e.g. {{expected}}
        values = test_arguments(ctx.prompt, test)
        if test.origin == "sample" and test.expected_output is not None:
            values.setdefault("expected", test.expected_output)
        spec, missing = fill_placeholders(metric.spec, values)
        if missing:
            reason = f"the check needs {{{{{missing[0]}}}}}, which this test does not give"
            return _result(item, outcome="unknown", reason=reason)
        check = parse_check(spec)
    result = check.evaluate(run.output or "")
    # The check's own measure (a count, a distance) is in its reason; the score is pass/fail.
    outcome: Outcome = "ok" if result.passed else "err"
    return _result(
        item, score=100.0 if result.passed else 0.0, outcome=outcome, reason=result.reason
    )


async def _judge(ctx: Context, llm: LLM, item: Item) -> None:
    run, test, metric, who = item
    assert who is not None
    values = judge_values(ctx, test, run.output or "", test.groundtruth)
    verdict = await judge(llm, metric, who, values, stage="metrics")
    ctx.metric_results.append(
        _result(
            item,
            score=verdict.score,
            outcome=verdict.outcome,
            reason=verdict.reason,
            error=verdict.error,
        )
    )
    ctx.checkpoint()


def _result(item: Item, **fields: object) -> MetricResult:
    test_id, model, run_index, metric, who = _key(item)
    return MetricResult(
        test_id=test_id,
        model=model,
        run_index=run_index,
        metric=metric,
        judge=who,
        **fields,  # type: ignore[arg-type]
    )


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
