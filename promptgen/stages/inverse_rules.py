"""Inverse rules: for each rule, a rule saying the opposite, linked to it by id."""

from __future__ import annotations

from promptgen.config import RunConfig
from promptgen.context import Context
from promptgen.prompting import instruction, numbered, stage_messages
from promptgen.prompting.analysis import inverse_answer
from promptgen.prompting.per_item import answers
from promptgen.results import Rule
from promptgen.stage import Projection, Scope, WorkItem

requires = ("rules",)
phase = "generation"
# A rule left without an inverse (the model skipped it, or copied the rule) is asked
# for again in one more call, inside the same unit.
ATTEMPTS = 2


def enabled(cfg: RunConfig) -> bool:
    """Tests read from a file come with the inverse rules they target."""
    return cfg.generating


def _missing(ctx: Context) -> list[Rule]:
    have = {r.inverse_of for r in ctx.inverse_rules}
    return [r for r in ctx.rules if r.id not in have]


def todo(ctx: Context, cfg: RunConfig) -> list[WorkItem]:
    missing = _missing(ctx)
    return [WorkItem("inverse_rules", calls=1)] if missing else []


def estimate(ctx: Context, cfg: RunConfig, projection: Projection) -> int:
    return 1 if (ctx.rules and _missing(ctx)) or (not ctx.rules and projection.rules) else 0


def _same(a: str, b: str) -> bool:
    def norm(text: str) -> str:
        return " ".join(text.lower().replace(".", " ").split())

    return norm(a) == norm(b)


async def run(item: WorkItem, scope: Scope) -> None:
    ctx, gen = scope.ctx, scope.cfg.gen
    error = None
    for attempt in range(ATTEMPTS):
        missing = _missing(ctx)
        if not missing:
            break
        messages = stage_messages(
            "inverse_rules",
            rules=numbered([r.text for r in missing]),
            instructions=instruction(ctx.prompt, gen.instructions, "inverse_output_rules"),
        )
        result = await scope.complete(
            messages, model="rules", output=inverse_answer(len(missing)),
            temperature=gen.temperature,
            variant=attempt,
        )  # fmt: skip
        if not result.ok:
            error = result.error
            continue
        error = None
        have = {r.inverse_of for r in ctx.inverse_rules}
        for number, text in answers(result.parsed).items():
            source = missing[number - 1]
            if not text.strip() or _same(text, source.text):
                continue  # a copy of the rule is no inverse: ask again
            if source.id not in have:
                ctx.inverse_rules.append(Rule.make(text, inverse_of=source.id))
                have.add(source.id)
    order = {r.id: i for i, r in enumerate(ctx.rules)}
    ctx.inverse_rules.sort(key=lambda r: order.get(r.inverse_of or "", 0))
    left = _missing(ctx)
    scope.set_count("inverse_rules", len(ctx.inverse_rules))
    scope.set_count("rules_without_inverse", len(left))
    if left:
        ids = ", ".join(r.id for r in left)
        scope.fail(error or f"{len(left)} rule(s) got no inverse rule: {ids}")
