"""Output rules: what every output of the prompt must do, one checkable sentence each."""

from __future__ import annotations

import re

from promptgen.config import RunConfig
from promptgen.context import Context
from promptgen.prompting import instruction
from promptgen.prompting.analysis import RulesAnswer, analysis_messages
from promptgen.results import Rule
from promptgen.stage import Projection, Scope, WorkItem

requires: tuple[str, ...] = ()
phase = "generation"


def enabled(cfg: RunConfig) -> bool:
    return cfg.analysing


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
    texts = [t.strip() for t in result.parsed.rules if t.strip()]
    distinct = merge_near_duplicates(texts)
    rules = [Rule.make(text) for text in distinct]
    kept = rules[: gen.max_rules or None]
    ctx.rules = kept
    scope.set_count("rules", len(kept))
    scope.set_count("over_max_rules", len(rules) - len(kept))
    scope.count("near_duplicates_merged", len(texts) - len(distinct))


# Two rules this similar (0-100, on normalised text) are one rule said twice, unless
# they differ in a number or a negation ("at most 50 words" / "at most 60 words").
SIMILAR = 93
_NEGATIONS = {"not", "no", "never", "none", "nothing", "without", "neither", "nor"}


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower().replace("n't", " not"))


def same_rule(a: str, b: str) -> bool:
    wa, wb = _words(a), _words(b)
    if wa == wb:
        return True
    numbers = [[w for w in ws if w.isdigit()] for ws in (wa, wb)]
    negations = [sorted(_NEGATIONS.intersection(ws)) for ws in (wa, wb)]
    if numbers[0] != numbers[1] or negations[0] != negations[1]:
        return False
    from rapidfuzz import fuzz

    return fuzz.ratio(" ".join(wa), " ".join(wb)) >= SIMILAR


def merge_near_duplicates(texts: list[str]) -> list[str]:
    """The texts with each near-duplicate of an earlier one left out (first kept)."""
    kept: list[str] = []
    for text in texts:
        if not any(same_rule(text, k) for k in kept):
            kept.append(text)
    return kept
