"""Calling a model under test: one call, or every step of a multi-step or multi-run
prompt (LVE).

Multi-step: an assistant message with a `variable` and no content is written by the
model under test: it is called on the messages before it, and its answer takes the
message's place before the walk goes on. The run's output is the last answer (the
final call when the prompt ends with a user message, named "response" as LVE names it).

Multi-run: every variant is called `repetitions` times, in order; each answer is one
step (named after its variant, `name #k` when repeated) and the output shows them all.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from promptgen.llm import LLM
from promptgen.model import Message, PromptUnderTest
from promptgen.prompting.invoke import CallSettings, test_arguments
from promptgen.rendering.render import render_messages
from promptgen.results import Test, Usage

RESPONSE = "response"  # LVE's name for the answer to the last message
REPETITION_STRIDE = 1000  # variant index of repetition k: run index + k * stride


def multi_step(prompt: PromptUnderTest) -> bool:
    return bool(prompt.variants) or any(m.to_fill for m in prompt.messages)


@dataclass
class Walk:
    """What one run of a multi-step or multi-run prompt produced."""

    steps: dict[str, str] = field(default_factory=dict)
    output: str | None = None
    error: str | None = None
    fault: Any = None
    usage: Usage = field(default_factory=Usage)
    latency_ms: float = 0.0


def _rendered(prompt: PromptUnderTest, messages: list[Message], values: dict[str, Any]) -> Any:
    """The messages rendered (RenderError when an input is missing)."""
    if messages is not prompt.messages:
        prompt = prompt.model_copy(update={"messages": messages})
    return render_messages(prompt, values)


async def walk(
    prompt: PromptUnderTest,
    llm: LLM,
    settings: CallSettings,
    test: Test,
    model: str,
    variant: int,
    stage: str,
) -> Walk:
    """Run `test` through every step of the prompt (raises RenderError before any call
    when the prompt cannot be rendered for it)."""
    values = test_arguments(prompt, test)
    result = Walk()
    if not prompt.variants:
        rendered = _rendered(prompt, prompt.messages, values)
        await _conversation(prompt.messages, rendered, result, llm, settings, model, variant, stage)
        return result
    plans = [(v, _rendered(prompt, v.messages, values)) for v in prompt.variants]
    answers: list[str] = []
    for variant_prompt, rendered in plans:
        for k in range(variant_prompt.repetitions):
            name = variant_prompt.name if variant_prompt.repetitions == 1 else ""
            name = name or f"{variant_prompt.name} #{k + 1}"
            one = Walk()
            index = variant + k * REPETITION_STRIDE
            await _conversation(
                variant_prompt.messages, rendered, one, llm, settings, model, index, stage
            )
            result.usage = result.usage + one.usage
            result.latency_ms += one.latency_ms
            if one.error is not None:
                result.error, result.fault = f"{name}: {one.error}", one.fault
                result.steps[name] = one.output or ""
                return result
            result.steps[name] = one.output or ""
            answers.append(f"### {name}\n{one.output}")
    result.output = "\n\n".join(answers)
    return result


async def _conversation(
    messages: list[Message],
    rendered: list[dict[str, Any]],
    result: Walk,
    llm: LLM,
    settings: CallSettings,
    model: str,
    variant: int,
    stage: str,
) -> None:
    """Fill the prompt's steps in order; the last answer is the output."""
    sent: list[dict[str, Any]] = []
    start = 0
    for position, name in _targets(messages):
        sent.extend(rendered[start:position])
        start = position + 1
        answer = await llm.complete(
            list(sent),
            model=model,
            variant=variant,
            stage=stage,
            **settings.call(),
        )
        result.usage = result.usage + answer.usage
        result.latency_ms += answer.latency_ms
        result.output = answer.text
        if answer.error is not None or answer.text is None:
            result.error = answer.error or f"{model}: empty answer"
            result.fault = answer.fault
            return
        result.steps[str(name)] = answer.text
        sent.append({"role": "assistant", "content": answer.text})


def _targets(messages: list[Message]) -> list[tuple[int, str]]:
    """Where the model answers, and under which name: each step to fill, then the
    response unless the last message is itself a step."""
    targets = [
        (i, m.variable) for i, m in enumerate(messages) if m.to_fill and m.variable is not None
    ]
    if not messages or not messages[-1].to_fill:
        targets.append((len(messages), RESPONSE))
    return targets


def calls_per_walk(prompt: PromptUnderTest) -> int:
    """Calls one walk of `prompt` makes: one per answer of each variant's every run."""
    if prompt.variants:
        return sum(v.repetitions * len(_targets(v.messages)) for v in prompt.variants)
    return len(_targets(prompt.messages))
