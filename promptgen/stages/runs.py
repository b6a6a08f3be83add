"""Run the models under test: one call per (test, model, run index) cell.

A failed cell records its error and the run goes on (PromptPex aborted the whole run
on one model error); a re-run asks again for missing and failed cells only. A reply
that is empty is a failed cell too (`TestRun.fault`): it keeps what came back, is never
judged, and is asked again. An answer cut off at the token limit is the prompt's answer
as deployed (its own `max_tokens`, or the model's limit): it is judged as it came back
and marked `cut_off` (a multi-step prompt's cut-off step stays a failed cell). Each run
is judged as soon as its call returns, so judging overlaps the other cells' calls
instead of waiting for the slowest one; the metrics stage scores what is left.
"""

from __future__ import annotations

from typing import NamedTuple

from promptgen.config import RunConfig
from promptgen.context import Context
from promptgen.errors import RenderError
from promptgen.evaluation.compiled import needed_for
from promptgen.evaluation.scoring import score
from promptgen.llm import LLM, batched
from promptgen.model import PromptUnderTest
from promptgen.prompting.invoke import CallSettings, call_settings, stored
from promptgen.results import Test, TestRun
from promptgen.secrets import scrub
from promptgen.selection import cells
from promptgen.stage import TEST_SET, Projection, Scope, WorkItem
from promptgen.stages._steps import multi_step, walk

requires = TEST_SET
phase = "evaluation"


def enabled(cfg: RunConfig) -> bool:
    return cfg.evaluating


def cell_key(test_id: str, model: str, index: int) -> str:
    return f"{test_id}|{model}|{index}"


class RunCell(NamedTuple):
    """One unit of the stage: run `run_index` of `test` on `model`; `retry`: its record
    is a failure, replaced when the cell is asked again."""

    test: Test
    model: str
    run_index: int
    retry: bool


def todo(ctx: Context, cfg: RunConfig) -> list[WorkItem[RunCell]]:
    done = {r.key for r in ctx.test_runs if r.ok}
    failed = {r.key for r in ctx.test_runs if not r.ok}
    return [
        WorkItem(cell_key(t.id, m, i), RunCell(t, m, i, (t.id, m, i) in failed))
        for t, m, i in cells(ctx, cfg)
        if (t.id, m, i) not in done
    ]


def estimate(ctx: Context, cfg: RunConfig, projection: Projection) -> int:
    projection.eval_tests = projection.eval_tests_of(ctx, cfg)
    projection.cells = projection.eval_tests * len(cfg.models) * cfg.ev.runs_per_test
    if projection.test_set_known:
        return len(todo(ctx, cfg))
    return projection.cells


async def run(item: WorkItem[RunCell], scope: Scope) -> None:
    ctx, cfg = scope.ctx, scope.cfg
    test, model, index, retry = item.data
    if retry:  # a failed cell asked again replaces its record
        ctx.test_runs = [r for r in ctx.test_runs if r.key != (test.id, model, index)]
    settings = call_settings(ctx.prompt, cfg.ev)
    if cfg.ev.store_completions:
        if scope.llm.stores_completions(model):
            settings = stored(settings, ctx.prompt, ctx.run_id, test, index)
        else:
            scope.note(f"store|{model}", f"{model}: its provider does not store completions")
    with batched(item.key):  # with --batch: one line of a provider batch, custom_id = key
        record = await run_test(ctx.prompt, scope.llm, settings, test, model, index, "runs")
        ctx.test_runs.append(record)
        scope.note(f"batch|{model}", scope.llm.batch_note(model))
        if record.error is not None:
            scope.fail(record.error)
            return
        scope.checkpoint()
        needed = needed_for(ctx, cfg, record, test)
        await score(ctx, scope.llm, needed)
        for judge in {n.judge for n in needed if n.judge is not None}:
            scope.note(f"batch|{judge}", scope.llm.batch_note(judge))


async def run_test(
    prompt: PromptUnderTest,
    llm: LLM,
    settings: CallSettings,
    test: Test,
    model: str,
    variant: int,
    stage: str,
) -> TestRun:
    """Call `model` with the prompt rendered for `test` (variant = run index or attempt)."""
    record = TestRun(test_id=test.id, model=model, run_index=variant)
    try:
        done = await walk(prompt, llm, settings, test, model, variant, stage)
    except RenderError as err:
        record.error = f"cannot render the prompt for this test: {err.one_line()}"
        return record
    record.output, record.error, record.fault = done.output, done.error, done.fault
    if done.fault == "truncated" and done.output and not multi_step(prompt):
        record.error, record.fault, record.cut_off = None, None, True
    record.usage, record.latency_ms = done.usage, done.latency_ms
    record.steps = done.steps if multi_step(prompt) else None
    if record.error is not None:
        record.error = scrub(record.error)
    return record
