"""Output rules: what every output of the prompt must do, one checkable sentence each."""

from __future__ import annotations

from promptgen.config import RunConfig
from promptgen.context import Context
from promptgen.prompting import instruction
from promptgen.prompting.analysis import RulesAnswer, analysis_messages
from promptgen.results import Rule
from promptgen.stage import Projection, Scope, WorkItem

requires: tuple[str, ...] = ()
phase = "generation"
# Before the rules exist, plans count on this many (capped by maxRules).
ESTIMATED_RULES = 10


def todo(ctx: Context, cfg: RunConfig) -> list[WorkItem]:
    """Nothing to do once the context has rules: generated here, or read from a tests
    file with the tests that target them (their ids must stay)."""
    return [] if ctx.rules else [WorkItem("rules")]


def estimate(ctx: Context, cfg: RunConfig, projection: Projection) -> int:
    known = len(ctx.rules) or ESTIMATED_RULES
    projection.rules = min(known, cfg.gen.max_rules or known)
    return len(todo(ctx, cfg))


async def run(item: WorkItem, scope: Scope) -> None:
    ctx, gen = scope.ctx, scope.cfg.gen
    messages = analysis_messages(
        ctx.prompt,
        "output_rules",
        max_rules=gen.max_rules or 0,
        instructions=instruction(ctx.prompt, gen.instructions, "output_rules"),
    )
    result = await scope.complete(
        messages, model="rules", output=RulesAnswer, temperature=gen.temperature
    )
    if not result.ok:
        scope.fail(result.error)
        return
    rules: list[Rule] = []
    for text in result.parsed.rules:
        rule = Rule.make(text)
        if rule.text and rule.id not in {r.id for r in rules}:
            rules.append(rule)
    kept = rules[: gen.max_rules or None]
    ctx.rules = kept
    scope.set_count("rules", len(kept))
    scope.set_count("over_max_rules", len(rules) - len(kept))
