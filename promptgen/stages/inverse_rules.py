"""Inverse rules: for each rule, a rule saying the opposite, linked to it by id."""

from __future__ import annotations

import asyncio
import functools
import re

from promptgen.config import RunConfig
from promptgen.context import Context
from promptgen.prompting import instruction, numbered, stage_messages
from promptgen.prompting.analysis import inverse_answer
from promptgen.prompting.inverse_forms import by_form, contradicts
from promptgen.prompting.likeness import AS_WRITTEN, same_rule
from promptgen.prompting.per_item import answers
from promptgen.prompting.seeds import content_words
from promptgen.resources import data_dir
from promptgen.results import Rule
from promptgen.stage import Projection, Scope, WorkItem

requires = ("rules",)
phase = "generation"
# Stepwise (small models), the template asks for the concrete behaviour of a breaking
# output, with examples (a small model negates word by word: "must include any
# punctuation"); the checks below refuse a copied example or a restated rule.
CONCRETE = "inverse_rule_concrete"
# A rule left without an inverse (the model skipped it, or copied the rule) is asked
# for again in one more call, inside the same unit.
ATTEMPTS = 2


def enabled(cfg: RunConfig) -> bool:
    """Tests read from a file come with the inverse rules they target."""
    return cfg.generating


def _missing(ctx: Context) -> list[Rule]:
    have = {r.inverse_of for r in ctx.inverse_rules}
    return [r for r in ctx.rules if r.id not in have]


def _asked(ctx: Context) -> list[Rule]:
    """Rules still without an inverse whose form gives none: a model is asked for these."""
    return [r for r in _missing(ctx) if by_form(r.text, r.source) is None]


def todo(ctx: Context, cfg: RunConfig) -> list[WorkItem[None]]:
    missing = _missing(ctx)
    asked = len(_asked(ctx))
    calls = asked if cfg.stepwise else min(1, asked)
    return [WorkItem("inverse_rules", calls=calls)] if missing else []


def estimate(ctx: Context, cfg: RunConfig, projection: Projection) -> int:
    if not ctx.rules:  # before the rules: every rule asked for (a plan's upper bound)
        return projection.rules if cfg.stepwise else min(1, projection.rules)
    return sum(item.calls for item in todo(ctx, cfg))


async def _ask(scope: Scope, rules: list[Rule], attempt: int) -> str | None:
    """Inverses for `rules` in one call, added to the context; the error, if it failed."""
    ctx, gen = scope.ctx, scope.cfg.gen
    messages = stage_messages(
        CONCRETE if scope.cfg.stepwise else "inverse_rules",
        rules=numbered([r.text for r in rules]),
        instructions=instruction(ctx.prompt, gen.instructions, "inverse_output_rules"),
    )
    result = await scope.complete(
        messages, model="rules", output=inverse_answer(len(rules)),
        temperature=gen.temperature,
        variant=attempt,
    )  # fmt: skip
    if not result.ok:
        return result.error
    have = {r.inverse_of for r in ctx.inverse_rules}
    for number, text in answers(result.parsed).items():
        source = rules[number - 1]
        if not text.strip() or _same(text, source.text):
            continue  # a copy of the rule is no inverse: ask again
        if not about(text, source.text) or not contradicts(text, source.source or source.text):
            scope.count("inverses_refused")
            continue  # a restatement, a copied example, or no contradiction: ask again
        if source.id not in have:
            ctx.inverse_rules.append(Rule.make(text, inverse_of=source.id))
            have.add(source.id)
    return None


def about(inverse: str, rule: str) -> bool:
    """Whether `inverse` is about `rule` and says something else: it shares a content
    word with the rule, is not one of the stage prompt's examples copied, and is not the
    rule said again with the same negations (a small model's restatement)."""
    if not content_words(inverse) & content_words(rule):
        return False
    if any(same_rule(inverse, example) for example in _examples()):
        return False
    return not (same_rule(_unframed(inverse), _unframed(rule)) or _restates(inverse, rule))


# Words a restatement may add or drop ("should be", "does follow").
_LINKS = frozenset({"the", "output", "is", "be", "should", "must", "does", "do", "will", "a", "an"})
_NEGATIONS = frozenset({"not", "no", "never", "none", "nothing", "without", "neither", "nor"})


def _restates(inverse: str, rule: str) -> bool:
    """The same words, fewer or more of them, and the same negations: not an inverse."""

    def words(text: str) -> set[str]:
        found = re.findall(r"[a-z0-9]+", text.lower().replace("n't", " not"))
        return {w[:5] for w in found if w not in _LINKS}

    a, b = words(inverse), words(rule)
    if a & _NEGATIONS != b & _NEGATIONS:
        return False
    return a <= b or b <= a


@functools.cache
def _examples() -> tuple[str, ...]:
    """The example inverses the stage prompt shows ("rule" -> "inverse" lines)."""
    text = (data_dir("prompts") / f"{CONCRETE}.prompty").read_text(encoding="utf-8")
    return tuple(re.findall(r'^- ".*?" -> "(.*?)"$', text, re.M))


def _unframed(text: str) -> str:
    return re.sub(r"^\W*the output( should| must)?( be| is)?\b", "", text.strip(), flags=re.I)


def said_plainly(rule: str) -> str:
    """The inverse of a rule no form gives and no model said as a contradiction."""
    if rule.startswith(AS_WRITTEN):
        return "The output breaks this instruction from the prompt:" + rule[len(AS_WRITTEN) :]
    return f"The output breaks this rule: {rule}"


def _same(a: str, b: str) -> bool:
    def norm(text: str) -> str:
        return " ".join(text.lower().replace(".", " ").split())

    return norm(a) == norm(b)


async def run(item: WorkItem[None], scope: Scope) -> None:
    ctx = scope.ctx
    # Where the rule's form gives its inverse (a prohibition, a number, a format), no
    # model is asked (prompting/inverse_forms.py).
    for rule in _missing(ctx):
        text = by_form(rule.text, rule.source)
        if text is not None:
            ctx.inverse_rules.append(Rule.make(text, inverse_of=rule.id))
            scope.count("inverses_by_form")
    # Stepwise, each rule in a call of its own: asked for several, a small model
    # answers every number with the same sentence.
    size = 1 if scope.cfg.stepwise else len(ctx.rules) or 1
    error = None
    for attempt in range(ATTEMPTS):
        missing = _missing(ctx)
        if not missing:
            break
        parts = [missing[i : i + size] for i in range(0, len(missing), size)]
        errors = await asyncio.gather(*(_ask(scope, part, attempt) for part in parts))
        error = next((e for e in errors if e), None)
    order = {r.id: i for i, r in enumerate(ctx.rules)}
    ctx.inverse_rules.sort(key=lambda r: order.get(r.inverse_of or "", 0))
    if not error:
        # What the model could not say as a contradiction is said plainly, so that every
        # rule has its inverse (and its inverse's tests).
        for rule in _missing(ctx):
            ctx.inverse_rules.append(Rule.make(said_plainly(rule.text), inverse_of=rule.id))
            scope.count("inverses_said_plainly")
        ctx.inverse_rules.sort(key=lambda r: order.get(r.inverse_of or "", 0))
    if ctx.edit is not None:  # after an edit: the inverses of the new rules are new
        edit = ctx.edit
        known = {*edit.rules_kept, *edit.rules_reworded, *edit.rules_added}
        edit.rules_added += [r.id for r in ctx.inverse_rules if r.id not in known]
    left = _missing(ctx)
    scope.set_count("inverse_rules", len(ctx.inverse_rules))
    scope.set_count("rules_without_inverse", len(left))
    if left:
        ids = ", ".join(r.id for r in left)
        scope.fail(error or f"{len(left)} rule(s) got no inverse rule: {ids}")
