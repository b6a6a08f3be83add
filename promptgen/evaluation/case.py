"""Building the case a metric evaluates: one test, one output, what judges may read."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from promptgen.context import Context
from promptgen.evaluation.protocol import Case
from promptgen.prompting import numbered, prompt_text
from promptgen.prompting.invoke import input_text, test_arguments, test_inputs
from promptgen.results import Test

if TYPE_CHECKING:
    from promptgen.llm import LLM


def judge_values(ctx: Context, test: Test, output: str, groundtruth: str | None) -> dict[str, Any]:
    """What a judge template can read (custom metrics also get the prompt's inputs)."""
    return {
        **test_inputs(ctx.prompt, test),
        "prompt": prompt_text(ctx.prompt),
        "intent": ctx.intent or "",
        "inputSpec": ctx.input_spec or "",
        "rules": numbered([r.text for r in ctx.rules]),
        "input": input_text(ctx.prompt, test),
        "output": output,
        "groundtruth": groundtruth or "",
    }


def make_case(
    ctx: Context,
    test: Test,
    output: str,
    *,
    judge: str | None,
    llm: LLM | None,
    stage: str,
    groundtruth: str | None = None,
    steps: dict[str, str] | None = None,
) -> Case:
    return Case(
        test=test,
        output=output,
        values=judge_values(ctx, test, output, groundtruth),
        arguments=test_arguments(ctx.prompt, test),
        judge=judge,
        llm=llm,
        stage=stage,
        steps=steps or {},
    )
