"""The instructions rules are read from, as units an edit is compared by (docs/carry-over.md).

A unit is what one rule is derived from: in stepwise mode a group of instruction
sentences (`seeds.group`, capped by maxRules), in whole-prompt mode one sentence. Its
`source` is spelled as `Rule.source` records it (the list's lead-in, then the text), so a
rule is matched to the unit it came from by equality, and an edited prompt's rules are
derived again only for the units whose text is new.

Rules read from the whole prompt at once carry no source: `attributed` finds the
sentence a rule is about by the content words they share.
"""

from __future__ import annotations

from dataclasses import dataclass

from promptgen.model import PromptUnderTest
from promptgen.prompting.seeds import Seed, content_words, group, group_text, instruction_seeds


@dataclass(frozen=True)
class Unit:
    """What one rule is derived from."""

    source: str  # as `Rule.source` records it
    body: str  # the instruction(s) to rewrite
    lead: str  # the lead-in of its list ("" if none)
    criterion: bool  # kept as written, no call (stages/rules.py)


def source_of(body: str, lead: str) -> str:
    """A rule's `source` for the instruction `body` under the lead-in `lead`."""
    return " ".join(p for p in (lead, body) if p)


def units(prompt: PromptUnderTest, max_rules: int, grouped: bool) -> list[Unit]:
    """The prompt's units: its instruction sentences, grouped down to `max_rules` when
    `grouped` (stepwise), else one each."""
    seeds = instruction_seeds(prompt)
    groups = group(seeds, max_rules) if grouped else [[s] for s in seeds]
    found = []
    for members in groups:
        body, lead = group_text(members)
        found.append(Unit(source_of(body, lead), body, lead, all(s.criterion for s in members)))
    return found


def seed_source(seed: Seed) -> str:
    """A sentence's source as a unit of its own (whole-prompt mode)."""
    body, lead = group_text([seed])
    return source_of(body, lead)


def attributed(rule_text: str, seeds: list[Seed]) -> Seed | None:
    """The sentence a rule read from the whole prompt is about: the one sharing the
    largest share of its content words with the rule (ties: the earlier), or None when
    none shares a word (a rule about the prompt as a whole)."""
    words = content_words(rule_text)
    best: tuple[float, int] | None = None
    found = None
    for index, seed in enumerate(seeds):
        mine = content_words(f"{seed.context} {seed.text}")
        shared = len(words & mine)
        if not shared:
            continue
        score = (shared / len(words | mine), -index)
        if best is None or score > best:
            best, found = score, seed
    return found
