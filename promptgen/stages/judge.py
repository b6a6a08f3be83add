"""Judging stages: rule groundedness and test validity, one concurrent call per item."""

from __future__ import annotations

import json

from pydantic import BaseModel, Field

from promptgen.context import Context
from promptgen.llm import LLM, bounded_gather
from promptgen.options import Options
from promptgen.results import Rule, Test
from promptgen.stages.common import prompt_text, stage_messages


class Grounded(BaseModel):
    grounded: bool
    reason: str = Field(max_length=400)


class Verdict(BaseModel):
    number: int
    valid: bool
    reason: str = Field(max_length=400)


class Verdicts(BaseModel):
    verdicts: list[Verdict]


# Tests judged per call: one call per test costs a round trip and a copy of the
# specification each; a handful per call keeps each judgement focused.
VALIDITY_BATCH = 8


async def groundedness(ctx: Context, llm: LLM, options: Options) -> Context:
    todo = [r for r in ctx.rules if r.grounded is None]
    await bounded_gather([lambda r=r: _ground(ctx, llm, r) for r in todo])
    return ctx


async def _ground(ctx: Context, llm: LLM, rule: Rule) -> None:
    messages = stage_messages("groundedness", prompt=prompt_text(ctx.prompt), rule=rule.text)
    result = await llm.complete(messages, model="eval", output=Grounded, stage="groundedness")
    if not result.ok:
        ctx.stage("groundedness").error = result.error
        return
    rule.grounded, rule.grounded_reason = result.parsed.grounded, result.parsed.reason
    ctx.checkpoint()


async def validity(ctx: Context, llm: LLM, options: Options) -> Context:
    todo = [t for t in ctx.tests if t.valid is None]
    batches = [todo[i : i + VALIDITY_BATCH] for i in range(0, len(todo), VALIDITY_BATCH)]
    await bounded_gather([lambda b=b: _judge(ctx, llm, b) for b in batches])
    record = ctx.stage("validity")
    record.counts = {
        "valid": sum(t.valid is True for t in ctx.tests),
        "invalid": sum(t.valid is False for t in ctx.tests),
        "not_judged": sum(t.valid is None for t in ctx.tests),
    }
    return ctx


async def _judge(ctx: Context, llm: LLM, tests: list[Test]) -> None:
    shown = "\n".join(
        f"{i}. {json.dumps(t.inputs, ensure_ascii=False)}" for i, t in enumerate(tests, start=1)
    )
    messages = stage_messages("validity", input_spec=ctx.input_spec or "", tests=shown)
    result = await llm.complete(messages, model="eval", output=Verdicts, stage="validity")
    if not result.ok:
        ctx.stage("validity").error = result.error
        return
    for verdict in result.parsed.verdicts:
        if 1 <= verdict.number <= len(tests) and tests[verdict.number - 1].valid is None:
            test = tests[verdict.number - 1]
            test.valid, test.validity_reason = verdict.valid, verdict.reason
    missing = sum(t.valid is None for t in tests)
    if missing:
        ctx.stage("validity").error = f"{missing} test(s) got no verdict; a re-run asks again"
    ctx.checkpoint()
