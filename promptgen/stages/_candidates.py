"""Several answers of one model to one test at once (groundtruth candidates).

A prompt that is one call gets its candidates from `LLM.complete_choices` (one request
with `n` where the backend takes it); a multi-step or multi-run prompt walks each
candidate on its own, concurrently. Candidate k is exactly the call `run_test` makes
with variant k, so either way shares one cache entry per candidate.
"""

from __future__ import annotations

import asyncio

from promptgen.errors import RenderError
from promptgen.llm import LLM
from promptgen.model import PromptUnderTest
from promptgen.prompting.invoke import CallSettings, test_arguments
from promptgen.rendering.render import render_messages
from promptgen.results import Test, TestRun
from promptgen.secrets import scrub
from promptgen.stages._steps import multi_step
from promptgen.stages.runs import run_test

STAGE = "groundtruth"


async def answer_candidates(
    prompt: PromptUnderTest,
    llm: LLM,
    settings: CallSettings,
    test: Test,
    model: str,
    attempts: list[int],
) -> list[TestRun]:
    """One answer per attempt (variant = attempt), in the order of `attempts`."""
    if multi_step(prompt):
        return list(
            await asyncio.gather(
                *(run_test(prompt, llm, settings, test, model, k, STAGE) for k in attempts)
            )
        )
    records = [TestRun(test_id=test.id, model=model, run_index=k) for k in attempts]
    try:
        messages = render_messages(prompt, test_arguments(prompt, test))
    except RenderError as err:
        for record in records:
            record.error = f"cannot render the prompt for this test: {err.one_line()}"
        return records
    answers = await llm.complete_choices(
        messages,
        variants=attempts,
        model=model,
        stage=STAGE,
        **settings.call(),
    )
    for record, answer in zip(records, answers, strict=True):
        record.output, record.fault = answer.text, answer.fault
        record.usage, record.latency_ms = answer.usage, answer.latency_ms
        if answer.error is not None or answer.text is None:
            record.error = scrub(answer.error or f"{model}: empty answer")
    return records
