"""What a small writer is told when it asks again for a slot whose input was refused.

A refused input's reason (`input_checks.problem`, `sample_shape`, the class check) names
what was wrong with it; the next try is told what to do instead, in one sentence that
goes last in its prompt (the rest stays the first try's, so its state is reused). It says
what to write, not what was written: a small model shown "ProductX" or the prompt's own
text writes them again.
"""

from __future__ import annotations

import re

from promptgen.prompting.input_checks import kind_of

_SHORT = re.compile(r"the sample has (\d+)")
_LANGUAGE = re.compile(r"another language than (\w+)")
_DECLARED = re.compile(r"declared kind \((.+)\)$")
_HOLDS = re.compile(r"holds no (.+), which its case names")
_NAMES = re.compile(r"never names (.+), which its case is about")
_OPENING = re.compile(r"\('(.+?)' \.\.\.\)")

_PLAIN = {
    "template_syntax": "Write plain text: no braces, no template syntax.",
    "copied_text": (
        "Write new content in your own words: nothing taken from the prompt, the example "
        "or the case."
    ),
    "empty": "Write a value that is not empty.",
    "near_duplicate": "Choose a less obvious subject and other details than a first idea.",
    "filler": "Use real, specific names and content, the way a real one would have them.",
    "looping": "Say each thing once.",
}


def advice(why: str, noun: str = "") -> str:
    """The sentence for the try after one refused for `why`, or "" where nothing helps."""
    kind = kind_of(why)
    if kind in _PLAIN:
        return _PLAIN[kind]
    if kind == "self_description":
        what = f"the {noun}" if noun else "the values"
        return f"Write {what} itself, the way its author would, not a sentence about it."
    if kind == "same_opening" and (found := _OPENING.search(why)):
        return f'Begin with other words than "{found.group(1)}".'
    if kind == "too_short" and (found := _SHORT.search(why)):
        return f"Make it as long as a real one: about {found.group(1)} words."
    if kind == "other_language" and (found := _LANGUAGE.search(why)):
        return f"Write it in {found.group(1)}."
    if kind == "wrong_kind" and (found := _DECLARED.search(why)):
        return f"It must be {found.group(1)}."
    if kind == "content_missing" and (found := _HOLDS.search(why) or _NAMES.search(why)):
        return f"Make sure it has {found.group(1)} in it."
    return ""  # a class the check read it as: naming it drew that class (classify-sentiment)


__all__ = ["advice"]
