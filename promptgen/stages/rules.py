"""Output rules: what every output of the prompt must do, one checkable sentence each."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence

from pydantic import BaseModel

from promptgen.config import RunConfig
from promptgen.context import Context
from promptgen.prompting import instruction, stage_messages
from promptgen.prompting.analysis import RulesAnswer, Sentence, analysis_messages
from promptgen.prompting.likeness import AS_WRITTEN, near_duplicate, same_rule
from promptgen.prompting.likeness import words as _words
from promptgen.prompting.seeds import Seed, content_words, group, group_text, instruction_seeds
from promptgen.results import Rule
from promptgen.stage import Projection, Scope, WorkItem

requires: tuple[str, ...] = ()
phase = "generation"


def enabled(cfg: RunConfig) -> bool:
    return cfg.analysing


# Before the rules exist, plans count on one rule per instruction sentence of the prompt
# (as the stepwise mode reads them), or on this many when it has none (capped by maxRules).
ESTIMATED_RULES = 5


EDIT = "rules|edit"


def todo(ctx: Context, cfg: RunConfig) -> list[WorkItem[None]]:
    """Nothing to do once the context has rules: generated here, or read from a tests
    file with the tests that target them (their ids must stay); after an edit of the
    prompt, the rules of its new and reworded instructions (stages/_rederive.py)."""
    if ctx.edit is not None and ctx.edit.derive:
        from promptgen.stages._rederive import calls

        return [WorkItem(EDIT, calls=calls(ctx, cfg))]
    return [] if ctx.rules else [WorkItem("rules")]


def estimate(ctx: Context, cfg: RunConfig, projection: Projection) -> int:
    if ctx.edit is not None and ctx.edit.derive:
        projection.rules = len(ctx.rules) + len(ctx.edit.derive)
        return sum(item.calls for item in todo(ctx, cfg))
    seeds = instruction_seeds(ctx.prompt) if cfg.stepwise and not ctx.rules else []
    if seeds:  # stepwise: one call per (grouped) instruction sentence, known in advance
        calls = len(group(seeds, cfg.gen.max_rules or 0))
        projection.rules = calls
        return calls
    # Before any call: the prompt's instruction sentences (what can be known without one);
    # a fixed guess of 10 made the plan of a 4-sentence prompt 2.5 times too big.
    known = len(ctx.rules) or len(instruction_seeds(ctx.prompt)) or ESTIMATED_RULES
    projection.rules = min(known, cfg.gen.max_rules or known)
    return len(todo(ctx, cfg))


async def run(item: WorkItem[None], scope: Scope) -> None:
    if item.key == EDIT:
        from promptgen.stages._rederive import rederive

        await rederive(scope, rewrite_all)
        return
    gen = scope.cfg.gen
    seeds = instruction_seeds(scope.ctx.prompt) if scope.cfg.stepwise else []
    found = await (_from_seeds(scope, seeds) if seeds else _from_prompt(scope))
    if found is None:
        return
    texts = [text for text, _ in found]
    sources = dict(reversed(found))  # a text's first source
    distinct = merge_near_duplicates(texts)
    rules = [Rule.make(text, source=sources[text]) for text in distinct]
    kept = rules[: gen.max_rules or None]
    scope.ctx.rules = kept
    if scope.ctx.edit is not None:  # derived anew after an edit (or --regenerate rules)
        from promptgen.stages._rederive import settle

        settle(scope.ctx, scope.ctx.edit)
    scope.set_count("rules", len(kept))
    scope.set_count("over_max_rules", len(rules) - len(kept))
    scope.count("near_duplicates_merged", len(texts) - len(distinct))


async def _from_prompt(scope: Scope) -> list[tuple[str, str | None]] | None:
    """The model reads the whole prompt and lists its rules (one call)."""
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
        return None
    return [(t.strip(), None) for t in result.parsed.rules if t.strip()]


class RuleFromInstruction(BaseModel):
    rule: Sentence


async def _from_seeds(scope: Scope, seeds: list[Seed]) -> list[tuple[str, str | None]] | None:
    """Stepwise: the prompt's instruction sentences, grouped down to maxRules, each
    rewritten as a rule in a call of its own (asked for several at once, a small model
    answers every number with the same rule). A rewrite that is not faithful to its
    instruction (its words mostly elsewhere, or the instruction's mostly missing) is
    replaced by the instruction itself, so every rule stays grounded in the prompt."""
    groups = group(seeds, scope.cfg.gen.max_rules or 0)
    quoted = [group_text(g) for g in groups]
    criteria = [all(s.criterion for s in g) for g in groups]
    kept = await rewrite_all(scope, quoted, criteria)
    if kept is not None:
        scope.set_count("instruction_sentences", len(seeds))
    return kept


async def rewrite_all(
    scope: Scope,
    quoted: list[tuple[str, str]],
    criteria: list[bool],
    said: Sequence[str] = (),
) -> list[tuple[str, str | None]] | None:
    """Each (instruction, lead-in) rewritten as a rule in a call of its own (a criterion
    kept as written), with its source; None when a call failed. `said`: rules already
    kept, which a new one must not say again."""
    gen = scope.cfg.gen
    # The author's outputRules guidance is not shown: a small model copied it in place
    # of the instruction (4 of 6 rewrites on samples/sql-from-question.prompty).

    async def rewrite(body: str, lead: str, criterion: bool) -> str | None:
        if criterion:  # no call: rewritten, 3 of 5 became rules about the output's wording
            scope.count("rules_kept_as_written")
            return as_written(body, lead)
        messages = stage_messages("rule_from_instruction", instruction=body, lead=lead)
        result = await scope.complete(
            messages, model="rules", output=RuleFromInstruction, temperature=gen.temperature
        )
        if not result.ok:
            scope.fail(result.error)
            return None
        text = result.parsed.rule.strip()
        if faithful(text, f"{lead} {body}"):
            return text
        scope.count("rules_kept_as_written")
        return as_written(body, lead)

    texts = await asyncio.gather(
        *(rewrite(body, lead, c) for (body, lead), c in zip(quoted, criteria, strict=True))
    )
    if scope.failed:
        return None
    # A small model may say two instructions with one sentence: the later one is kept as
    # written, so neither instruction is lost and no rule is said twice.
    kept: list[tuple[str, str | None]] = []
    for text, (body, lead) in zip(texts, quoted, strict=True):
        earlier = [*said, *(k for k, _ in kept)]
        if text and any(near_duplicate(text, k) for k in earlier):
            scope.count("rules_kept_as_written")
            text = as_written(body, lead)
        if text:
            kept.append((text, " ".join(p for p in (lead, body) if p)))
    return kept


def as_written(body: str, lead: str = "") -> str:
    """An instruction kept as the prompt says it, with the lead-in of its list."""
    return " ".join(p for p in (AS_WRITTEN, lead, body) if p)


# Share of a rewrite's own words that must come from its instruction, and of the
# instruction's words the rewrite must keep (a rule may say a long list more briefly).
FROM_SOURCE = 0.5
KEPT = 0.35


def faithful(rule: str, source: str) -> bool:
    """Whether `rule` says what `source` says: most of its content words come from the
    source, it keeps most of the source's, it states the source's numbers and no others
    ("at most 72 characters" lost its 72 in a rewrite that kept enough words; "write one
    haiku" became "a three-line poem with 5 syllables per line"), and it keeps the act
    each prohibition forbids ("never guess an email address" became "should not contain
    any email addresses")."""
    said, meant = content_words(rule), content_words(source)
    if not said or not meant or not numbers(source) <= numbers(rule):
        return False
    if not numbers(rule) - {"1"} <= numbers(source):  # "1 to 3" for "one to three"
        return False
    if not forbidden_acts(source) <= {w[:STEM] for w in _words(rule)}:
        return False
    if not _forbids_only_what(rule, source) or _says_more(rule, source):
        return False
    shared = len(said & meant)
    return shared / len(said) >= FROM_SOURCE and shared / len(meant) >= KEPT


def _forbids_only_what(rule: str, source: str) -> bool:
    """A rewrite forbids nothing its instruction does not ("Judge the feelings about the
    product, not about the delivery company" became "... without mentioning the delivery
    company": a prohibition the prompt never states)."""
    from promptgen.prompting.behaviours import forbidden

    allowed = [content_words(a) for a in forbidden(source)]
    for act in forbidden(rule):
        words = content_words(act) - {"inclu", "add", "use"}
        if words and not any(words & a for a in allowed):
            return False
    return True


def _says_more(rule: str, source: str) -> bool:
    """A rewrite that has the output say something its instruction never asks it to
    ("it is confidential and you never share it" became "The output should clearly
    state that the discount code is confidential")."""
    verbs = {m.group(1)[:STEM].lower() for m in _SAYING.finditer(rule)}
    return bool(verbs - {w[:STEM] for w in _words(source)})


# An obligation to say something: "should clearly state that", "must mention".
_SAYING = re.compile(
    r"\b(?:should|must|will|needs? to|has to)\s+(?:\w+ly\s+)?(?:also\s+)?"
    r"(state|mention|say|explain|tell|inform|remind|note|indicate|acknowledge|declare|"
    r"warn|point out)\b",
    re.IGNORECASE,
)
# A prohibition's verb: "never guess", "do not repeat", "must not invent".
_PROHIBITION = re.compile(
    r"\b(?:never|(?:do|does|must|should|may|can|will)\s+not|don't|doesn't|mustn't|cannot)"
    r"\s+([a-z]+)",
    re.IGNORECASE,
)
# Verbs too plain to carry the meaning ("do not add punctuation": "no punctuation").
_LIGHT_VERBS = frozenset(
    "add be do get give go have include let make put say use write".split()  # noqa: SIM905
)
STEM = 4  # letters compared: "explain" / "explanation", "repeat" / "repeated"


def forbidden_acts(text: str) -> set[str]:
    """The stems of the verbs the text's prohibitions forbid."""
    verbs = (m.group(1).lower() for m in _PROHIBITION.finditer(text))
    return {v[:STEM] for v in verbs if v not in _LIGHT_VERBS}


# "one" is left out: "write one message" says "a message" as often as a count.
_COUNTS = ("two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")
_NUMBER_WORDS = {w: str(i) for i, w in enumerate(_COUNTS, 2)}


def numbers(text: str) -> set[str]:
    """The numbers a text states, in digits ("one to three" and "1 to 3" are the same)."""
    words = re.findall(r"[a-z]+|\d+", text.lower())
    return {_NUMBER_WORDS.get(w, w) for w in words if w.isdigit() or w in _NUMBER_WORDS}


def merge_near_duplicates(texts: list[str]) -> list[str]:
    """The texts with each near-duplicate of an earlier one left out (first kept)."""
    kept: list[str] = []
    for text in texts:
        if not any(same_rule(text, k) for k in kept):
            kept.append(text)
    return kept
