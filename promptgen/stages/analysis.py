"""The analysis stages: intent, input specification, output rules, inverse rules."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field

from promptgen.context import Context
from promptgen.llm import LLM
from promptgen.options import Options
from promptgen.results import Rule
from promptgen.stages.common import (
    inputs_text,
    instruction,
    numbered,
    prompt_text,
    samples_text,
    stage_messages,
)


class IntentAnswer(BaseModel):
    # The field name itself steers small models toward describing, not answering.
    task_description: str = Field(
        min_length=20, max_length=300, description="One sentence describing the task."
    )


# Bounded lengths keep a small model from running on until its token limit.
Sentence = Annotated[str, Field(min_length=3, max_length=300)]


class InputSpecAnswer(BaseModel):
    constraints: list[Sentence] = Field(
        min_length=1, max_length=15, description="One constraint on the inputs per item."
    )


class RulesAnswer(BaseModel):
    rules: list[Sentence] = Field(min_length=1, max_length=50)


class InverseItem(BaseModel):
    number: int = Field(description="The number of the rule this one inverts.")
    inverse: Sentence


class InverseAnswer(BaseModel):
    inverse_rules: list[InverseItem]


async def _ask(
    ctx: Context, llm: LLM, options: Options, stage: str, template: str, output: type[BaseModel],
    **values: object,
) -> BaseModel | None:  # fmt: skip
    """One analysis call about the prompt under test; a failure is recorded on the stage."""
    messages = stage_messages(template, prompt=prompt_text(ctx.prompt), **values)
    result = await llm.complete(
        messages, model="rules", output=output, temperature=options.temperature, stage=stage
    )
    if not result.ok:
        ctx.stage(stage).error = result.error
        return None
    return result.parsed


async def intent(ctx: Context, llm: LLM, options: Options) -> Context:
    if ctx.intent is not None:
        return ctx
    answer = await _ask(
        ctx, llm, options, "intent", "intent", IntentAnswer,
        instructions=instruction(ctx.prompt, options.instructions, "intent"),
    )  # fmt: skip
    if isinstance(answer, IntentAnswer):
        ctx.intent = answer.task_description.strip()
    return ctx


async def input_spec(ctx: Context, llm: LLM, options: Options) -> Context:
    if ctx.input_spec is not None:
        return ctx
    answer = await _ask(
        ctx, llm, options, "input_spec", "input_spec", InputSpecAnswer,
        inputs=inputs_text(ctx.prompt),
        samples=samples_text(ctx.prompt),
        instructions=instruction(ctx.prompt, options.instructions, "input_spec"),
    )  # fmt: skip
    if isinstance(answer, InputSpecAnswer):
        ctx.input_spec = "\n".join(f"- {c.strip()}" for c in answer.constraints if c.strip())
    return ctx


async def output_rules(ctx: Context, llm: LLM, options: Options) -> Context:
    if "rules" in ctx.stage("rules").counts:
        return ctx
    answer = await _ask(
        ctx, llm, options, "rules", "output_rules", RulesAnswer,
        max_rules=options.max_rules or 0,
        instructions=instruction(ctx.prompt, options.instructions, "output_rules"),
    )  # fmt: skip
    if not isinstance(answer, RulesAnswer):
        return ctx
    rules: list[Rule] = []
    for text in answer.rules:
        rule = Rule.make(text)
        if rule.text and rule.id not in {r.id for r in rules}:
            rules.append(rule)
    dropped = len(rules) - len(rules[: options.max_rules or None])
    ctx.rules = rules[: options.max_rules or None]
    ctx.stage("rules").counts = {"rules": len(ctx.rules), "over_max_rules": dropped}
    return ctx


def _same(a: str, b: str) -> bool:
    def norm(text: str) -> str:
        return " ".join(text.lower().replace(".", " ").split())

    return norm(a) == norm(b)


async def inverse_rules(ctx: Context, llm: LLM, options: Options) -> Context:
    """Exactly one inverse per rule, linked by id; a missing one is asked for again."""
    record = ctx.stage("inverse_rules")
    if "inverse_rules" in record.counts:
        return ctx
    have = {r.inverse_of for r in ctx.inverse_rules}
    for attempt in range(2):
        todo = [r for r in ctx.rules if r.id not in have]
        if not todo:
            break
        messages = stage_messages(
            "inverse_rules",
            rules=numbered([r.text for r in todo]),
            instructions=instruction(ctx.prompt, options.instructions, "inverse_output_rules"),
        )
        result = await llm.complete(
            messages, model="rules", output=InverseAnswer, temperature=options.temperature,
            stage="inverse_rules", variant=attempt,
        )  # fmt: skip
        if not result.ok:
            record.error = result.error
            continue
        for item in result.parsed.inverse_rules:
            if 1 <= item.number <= len(todo) and item.inverse.strip():
                source = todo[item.number - 1]
                if _same(item.inverse, source.text):
                    continue  # a copy of the rule is no inverse: ask again
                if source.id not in have:
                    ctx.inverse_rules.append(Rule.make(item.inverse, inverse_of=source.id))
                    have.add(source.id)
    order = {r.id: i for i, r in enumerate(ctx.rules)}
    ctx.inverse_rules.sort(key=lambda r: order.get(r.inverse_of or "", 0))
    missing = [r.id for r in ctx.rules if r.id not in have]
    record.counts = {"inverse_rules": len(ctx.inverse_rules), "rules_without_inverse": len(missing)}
    if missing:
        record.error = f"{len(missing)} rule(s) got no inverse rule: {', '.join(missing)}"
    return ctx
