"""When two texts say the same thing: rules said twice, near-duplicate rules, behaviours
and test inputs. No model: word sets and token-sort similarity (rapidfuzz)."""

from __future__ import annotations

import re

# How a stepwise rule quotes an instruction it keeps as the prompt wrote it.
AS_WRITTEN = "The output follows this instruction from the prompt:"


def words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower().replace("n't", " not"))


# Two rules this similar (0-100, on normalised text) are one rule said twice, unless
# they differ in a number or a negation ("at most 50 words" / "at most 60 words").
SIMILAR = 93
_NEGATIONS = {"not", "no", "never", "none", "nothing", "without", "neither", "nor"}
# Numbers written as words are numbers too ("at most three sentences" / "at most two").
# Not "one": "one haiku" and "a haiku" say the same.
_NUMBER_WORDS = set(
    """two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen
    sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety
    hundred thousand""".split()  # noqa: SIM905
)


def _numbers(ws: list[str]) -> list[str]:
    return sorted(w for w in ws if w.isdigit() or w in _NUMBER_WORDS)


def same_rule(a: str, b: str) -> bool:
    wa, wb = words(a), words(b)
    if wa == wb:
        return True
    numbers = [_numbers(ws) for ws in (wa, wb)]
    negations = [sorted(_NEGATIONS.intersection(ws)) for ws in (wa, wb)]
    if numbers[0] != numbers[1] or negations[0] != negations[1]:
        return False
    from rapidfuzz import fuzz

    return fuzz.ratio(" ".join(wa), " ".join(wb)) >= SIMILAR


_FRAMING = re.compile(r"^\W*(the )?(output|response|answer)( must| should| is| does)?\b", re.I)


def near_duplicate(a: str, b: str) -> bool:
    """Looser than `same_rule`: the same words in any order once the "The output ..."
    frame is set aside (token-sort similarity >= 85), with the same numbers and the same
    negations. Stepwise rules are kept apart by it; bench/quality.py counts by it."""
    if same_rule(a, b):
        return True
    a, b = _unframed(a), _unframed(b)
    head_a, colon, tail_a = a.rpartition(":")
    head_b, _, tail_b = b.rpartition(":")
    if colon and words(head_a) == words(head_b):
        a, b = tail_a, tail_b  # two items of one list: the lead-in they share is no likeness
    wa, wb = words(a), words(b)
    if _numbers(wa) != _numbers(wb):
        return False
    if sorted(_NEGATIONS.intersection(wa)) != sorted(_NEGATIONS.intersection(wb)):
        return False
    from rapidfuzz import fuzz

    return fuzz.token_sort_ratio(" ".join(wa), " ".join(wb)) >= LOOSELY_SIMILAR


LOOSELY_SIMILAR = 85


def _unframed(text: str) -> str:
    text = text.removeprefix(AS_WRITTEN)
    return _FRAMING.sub("", text)
