"""Stage `mutant_runs`: the saved suite on every mutant. One unit per (mutant, test,
model, run index) cell: the model under test is called with the mutated prompt, and
the output is scored with the run's metrics, judged against the original prompt and
its rules (the suite is the specification; the mutant is what it tests). A failed
call or judgement is recorded on the cell and asked again on a re-run."""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

from promptgen.config import RunConfig
from promptgen.context import Context, summary
from promptgen.evaluation.scoring import needed, verdict
from promptgen.llm import bounded_gather
from promptgen.mutation.build import mutated
from promptgen.prompting.invoke import call_settings
from promptgen.results import MetricResult, MetricSummary, Mutant, MutantRun, Test, TestRun
from promptgen.selection import eval_tests
from promptgen.stage import Scope, WorkItem
from promptgen.stages.runs import run_test

requires = ("mutants",)
phase = "evaluation"
STAGE = "mutant_runs"


class MutantCell(NamedTuple):
    """One unit of the stage: a mutant's run `run_index` of `test` on `model`."""

    mutant: Mutant
    test: Test
    model: str
    run_index: int


def cells(ctx: Context, cfg: RunConfig) -> list[MutantCell]:
    """Every cell of the non-equivalent mutants: the original's cells, per mutant."""
    state = ctx.mutation
    if state is None or not state.proposed:
        return []
    tests = eval_tests(ctx, cfg)
    return [
        MutantCell(mutant, test, model, index)
        for mutant in state.mutants
        if not mutant.equivalent
        for model in state.models
        for test in tests
        for index in range(cfg.ev.runs_per_test)
    ]


def judge_calls(test: Test, model: str, cfg: RunConfig) -> int:
    """Judge calls one successful run of `test` needs."""
    probe = TestRun(test_id=test.id, model=model, output="")
    return sum(n.calls for n in needed(probe, test, cfg.output_metrics, cfg.judges))


def todo(ctx: Context, cfg: RunConfig) -> list[WorkItem[MutantCell]]:
    state = ctx.mutation
    done = {r.key for r in state.runs if r.ok} if state else set()
    work = []
    for cell in cells(ctx, cfg):
        mutant, test, model, index = cell
        key = f"{mutant.id}|{test.id}|{model}|{index}"
        if key not in done:
            calls = 1 + judge_calls(test, model, cfg)
            work.append(WorkItem(key, cell, calls))
    return work


async def run(item: WorkItem[MutantCell], scope: Scope) -> None:
    ctx, cfg = scope.ctx, scope.cfg
    state = ctx.mutation
    assert state is not None
    mutant, test, model, index = item.data
    settings = call_settings(ctx.prompt, cfg.ev)
    prompt = mutated(ctx.prompt, mutant)
    record = await run_test(prompt, scope.llm, settings, test, model, index, STAGE)
    cell = MutantRun(
        mutant_id=mutant.id, test_id=test.id, model=model, run_index=index,
        output=record.output, error=record.error,
    )  # fmt: skip
    if record.ok:
        items = needed(record, test, cfg.output_metrics, cfg.judges)
        results = await bounded_gather(
            [partial(verdict, ctx, scope.llm, i, stage=STAGE) for i in items]
        )
        cell.metrics = _summaries(results, cfg)
        failed = [r.error for r in results if r.error is not None]
        if failed:
            cell.error = f"judge failed: {failed[0]}"
    elif cell.error is None:
        cell.error = f"the reply was {record.fault or 'missing'}"
    state.runs = [r for r in state.runs if r.key != item.key] + [cell]
    if cell.error is not None:
        scope.fail(cell.error)
    scope.checkpoint()


def _summaries(results: list[MetricResult], cfg: RunConfig) -> dict[str, MetricSummary]:
    scorers = {m.name: m.info.scorer for m in cfg.output_metrics}
    names = dict.fromkeys(r.metric for r in results)
    return {
        name: summary([r for r in results if r.metric == name], scorers.get(name, False))
        for name in names
    }
