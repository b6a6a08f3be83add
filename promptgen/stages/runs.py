"""Run the models under test: one call per (test, model, run index) cell.

A failed cell records its error and the run goes on (PromptPex aborted the whole run
on one model error); a re-run asks again for missing and failed cells only.
"""

from __future__ import annotations

from promptgen.context import Context
from promptgen.errors import RenderError
from promptgen.llm import LLM, bounded_gather
from promptgen.options import Options
from promptgen.results import Test, TestRun
from promptgen.stages.invoke import CallSettings, call_settings, test_messages
from promptgen.stages.metrics import Scorer
from promptgen.stages.select import cells


def todo(ctx: Context, options: Options) -> list[tuple[Test, str, int]]:
    done = {r.key for r in ctx.test_runs if r.ok}
    return [c for c in cells(ctx, options) if (c[0].id, c[1], c[2]) not in done]


def complete(ctx: Context, options: Options) -> bool:
    return not todo(ctx, options)


async def run(ctx: Context, llm: LLM, options: Options) -> Context:
    settings = call_settings(ctx.prompt, options)
    work = todo(ctx, options)
    retried = {(t.id, m, i) for t, m, i in work}  # failed cells about to be asked again
    ctx.test_runs = [r for r in ctx.test_runs if r.key not in retried]
    scorer = Scorer.build(ctx, llm, options) if options.evals else None
    await bounded_gather([lambda c=c: _cell(ctx, llm, scorer, settings, *c) for c in work])
    record = ctx.stage("runs")
    failed = [r for r in ctx.test_runs if r.error is not None]
    record.counts = {"cells": len(cells(ctx, options)), "failed": len(failed)}
    record.error = (
        f"{len(failed)} cell(s) failed, e.g. {failed[0].error}; a re-run retries them"
        if failed
        else None
    )
    return ctx


async def run_test(
    ctx: Context, llm: LLM, settings: CallSettings, test: Test, model: str, variant: int, stage: str
) -> TestRun:
    """Call `model` with the prompt rendered for `test` (variant = run index or attempt)."""
    record = TestRun(test_id=test.id, model=model, run_index=variant)
    try:
        messages = test_messages(ctx.prompt, test)
    except RenderError as err:
        record.error = f"cannot render the prompt for this test: {err.one_line()}"
        return record
    result = await llm.complete(
        messages,
        model=model,
        output=settings.output,
        temperature=settings.temperature,
        max_tokens=settings.max_tokens,
        seed=settings.seed,
        params=settings.params,
        variant=variant,
        stage=stage,
    )
    record.output, record.error = result.text, result.error
    if result.error is None and result.text is None:
        record.error = f"{model}: empty answer"
    record.usage, record.latency_ms = result.usage, result.latency_ms
    return record


async def _cell(
    ctx: Context,
    llm: LLM,
    scorer: Scorer | None,
    settings: CallSettings,
    test: Test,
    model: str,
    index: int,
) -> None:
    record = await run_test(ctx, llm, settings, test, model, index, "runs")
    ctx.test_runs.append(record)
    ctx.checkpoint()
    if scorer is not None:
        await scorer.score(record)
