"""Counts in words: a number and its noun agreeing in number, for every line a user reads."""

from __future__ import annotations


def plural(noun: str) -> str:
    """The plural of one of the nouns promptgen counts (`run` -> `runs`, `cross` ->
    `crosses`, `category` -> `categories`)."""
    if noun.endswith(("s", "x", "ch", "sh")):
        return f"{noun}es"
    if noun.endswith("y") and noun[-2:-1] not in ("a", "e", "i", "o", "u"):
        return f"{noun[:-1]}ies"
    return f"{noun}s"


def counted(n: int, noun: str, many: str | None = None) -> str:
    """`n` and `noun` agreeing in number: "1 run", "3 runs", "0 runs";
    `many` gives an irregular plural, or a plural of several words ("model calls")."""
    word = noun if n == 1 else (many or plural(noun))
    return f"{n} {word}"
