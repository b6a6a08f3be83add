"""Inverse rules from a rule's form, and the check that an inverse contradicts its rule.

Where the instruction behind a rule has a form, its inverse follows from it without a
model: a prohibition's inverse is the act it forbids ("Do not explain your answer" ->
"The output explains its answer"), a limit's inverse is the neighbouring number ("at most
72 characters" -> "more than 72 characters"), a required format's inverse is the nearest
wrong one (lowercase -> capital letters; bare JSON -> JSON in a code fence or with text
around it; "Start with X" -> "does not start with X"). A model is asked only where no
form applies, and its answer is kept only when it contradicts the rule: it must be about
the rule's subject and say the opposite (another polarity, another number, or a word of
contrast such as "other than"), never the rule again ("The output does not contain a
title." is no inverse of "Do not add a title").
"""

from __future__ import annotations

import re

from promptgen.prompting.behaviours import forbidden
from promptgen.prompting.likeness import AS_WRITTEN
from promptgen.prompting.seeds import content_words
from promptgen.words import plural

_NUMBER_WORDS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "twelve": 12, "twenty": 20,
}  # fmt: skip
_NUMBER = r"(\d+|" + "|".join(_NUMBER_WORDS) + r")"
_LIMIT = re.compile(
    r"(?P<scope>\b(?:a|an|the)\s+[\w-]+(?:\s+[\w-]+){0,2}?\s+of\s+)?"
    r"(?P<cmp>at most|no more than|up to|under|fewer than|less than|at least|more than|"
    r"exactly)\s+(?:about\s+)?" + _NUMBER + r"(?:\s+(?P<unit>[a-z]+(?:\s+[a-z]+)?))?",
    re.I,
)
_RANGE = re.compile(
    r"(?P<scope>\b(?:a|an|the)\s+[\w-]+(?:\s+[\w-]+){0,2}?\s+of\s+)?\b" + _NUMBER
    + r"\s+(?:to|-)\s+" + _NUMBER + r"\s+(?:short\s+)?(?P<unit>[a-z]+)",
    re.I,
)  # fmt: skip
_UNITS = re.compile(
    r"^(?:short\s+)?(characters?|words?|sentences?|lines?|paragraphs?|items?|bullets?|"
    r"bullet points?|points?|rows?|tags?|emojis?|questions?|examples?|steps?|names?|"
    r"syllables?|chars?|tokens?|entries|entry|options?|results?|reasons?)\b",
    re.I,
)


def _number(text: str) -> int:
    return int(text) if text.isdigit() else _NUMBER_WORDS[text.lower()]


def _unit(raw: str | None) -> str | None:
    match = _UNITS.match(raw or "")
    return match.group(1) if match else None


def _limit(text: str) -> str | None:
    """ "a first line of at most 72 characters" -> "The output has a first line of more
    than 72 characters."; "one to three short lines" -> "more than 3 lines"; "Rate ... from
    1 (unusable) to 5 (excellent)" -> a score outside 1 to 5."""
    from promptgen.prompting.behaviours import _SCALE  # the scale a class behaviour reads

    scale = _SCALE.search(text)
    if scale and re.search(r"\b(rate|score|grade|rank)", text, re.I):
        low, high = scale.group("low"), scale.group("high")
        return f"The output gives no score, or a score outside {low} to {high}."
    for match in _RANGE.finditer(text):
        unit = _unit(match.group("unit"))
        if unit:
            high = _number(match.group(3))
            scope = match.group("scope") or ""
            return f"The output has {scope}more than {high} {_plural(unit)}."
    for match in _LIMIT.finditer(text):
        unit = _unit(match.group("unit"))
        if not unit:
            continue
        n = _number(match.group(3))
        scope = match.group("scope") or ""
        cmp = match.group("cmp").lower()
        if cmp in ("under", "fewer than", "less than"):
            return f"The output has {scope}{n} or more {_plural(unit)}."
        if cmp in ("at most", "no more than", "up to"):
            return f"The output has {scope}more than {n} {_plural(unit)}."
        if cmp in ("at least", "more than"):
            limit = n if cmp == "at least" else n + 1
            return f"The output has {scope}fewer than {limit} {_plural(unit)}."
        return f"The output has {scope}{n + 1} {_plural(unit)} instead of exactly {n}."
    return None


def _plural(unit: str) -> str:
    return unit if unit.endswith("s") else plural(unit)


def third_person(act: str) -> str:
    """ "explain its answer" -> "explains its answer"."""
    verb, _, rest = act.partition(" ")
    irregular = {"have": "has", "be": "is", "do": "does", "go": "goes"}
    low = verb.lower()
    if low in irregular:
        verb = irregular[low]
    elif re.search(r"[^aeiou]y$", low):
        verb = verb[:-1] + "ies"
    elif low.endswith(("s", "sh", "ch", "x", "z", "o")):
        verb += "es"
    elif low.isalpha():
        verb += "s"
    return f"{verb} {rest}".strip()


_PRONOUN_END = re.compile(r"\b(it|one|them|this|that|so)$", re.I)


def _prohibition(text: str) -> str | None:
    acts = [a for a in forbidden(text) if not _PRONOUN_END.search(a)]
    if not acts:
        return None
    said = [third_person(a) for a in acts]
    joined = said[0] if len(said) == 1 else ", ".join(said[:-1]) + " or " + said[-1]
    return f"The output {joined}."


_LANGUAGE = re.compile(
    r"\b(?:answer|reply|write|respond|translate\s+\w+\s+into|written)\s+(?:only\s+)?in\s+"
    r"(?P<language>English|French|German|Spanish|Italian|Portuguese|Dutch|Japanese|Chinese|"
    r"Korean|Polish|Swedish|Turkish|Russian|Arabic)\b",
    re.I,
)
_STARTS = re.compile(
    r"\b(?:start|begin)(?:s|ing)?\s+(?:the\s+\w+\s+|it\s+|your\s+\w+\s+)?with\s+"
    r"(?:[\w-]+\s+){0,3}?(?P<what>\"[^\"]+\"|“[^”]+”|`[^`]+`|"
    r"(?-i:[A-Z][A-Z_]+(?:\s+or\s+[A-Z][A-Z_]+)*\b))",
    re.I,
)
_ONLY = re.compile(
    r"\b(?P<verb>use|using|work|answer|rely|draw)\s+only\s+(?:from\s+|on\s+)?"
    r"(?P<what>(?:the|your|this)\s+[^;.,:]+)|\bonly\s+(?P<verb2>use)\s+(?P<what2>the\s+[^;.,:]+)",
    re.I,
)
_ENDS = re.compile(
    r"\bends?\s+(?:the\s+\w+\s+|it\s+)?with\s+(?P<what>\"[^\"]+\"|“[^”]+”|`[^`]+`)", re.I
)


def _format(text: str) -> str | None:
    """The nearest wrong format to the one the instruction requires."""
    low = text.lower()
    match = _STARTS.search(text)
    if match:
        return f"The output does not start with {match.group('what')}."
    match = _ENDS.search(text)
    if match:
        return f"The output does not end with {match.group('what')}."
    if re.search(r"```\s*\w+|code block", low):
        return (
            "The output is not one code block alone: the code fence is missing or text "
            "stands outside it."
        )
    if re.search(r"\bjson\b", low) and re.search(r"\b(only|nothing else|json object|array)\b", low):
        return "The output is not bare JSON: it is wrapped in a code fence or has text around it."
    if re.search(r"\bcsv\b", low):
        return (
            "The output is not bare CSV: it is wrapped in a code fence, has text around it, "
            "or is another format."
        )
    if re.search(r"\bmarkdown\b", low):
        return "The output is plain text without Markdown headings, lists or emphasis."
    match = _LANGUAGE.search(text)
    if match:
        return f"The output is written in a language other than {match.group('language')}."
    if re.search(r"\bone of\b", low) and re.search(r"\b(nothing else|only)\b", low):
        capital = " or uses capital letters" if "lowercase" in low else ""
        return (
            "The output is not just one of the allowed words: it adds other words around "
            f"it, gives a word outside the list{capital}."
        )
    if "lowercase" in low or "lower case" in low:
        return "The output uses capital letters."
    match = _ONLY.search(text)
    if match:
        what = match.group("what") or match.group("what2")
        return f"The output uses something other than {what.strip()}."
    return None


def _criterion(text: str) -> str | None:
    """A criterion the prompt applies to the input ("Things that count against a title:
    it is too vague"): the inverse overlooks it where the input shows it."""
    from promptgen.prompting.seeds import is_instruction

    lead, colon, item = text.partition(":")
    if not colon or not item.strip() or is_instruction(lead) or is_instruction(item):
        return None
    noun = re.search(r"\b(?:a|an|the)\s+([a-z]+)\s*$", lead, re.I)
    if noun is None:  # "Things that count against a title:" names what it judges
        return None
    where = f"a {noun.group(1)}"
    return f"The output overlooks this in {where} that shows it ({lead.strip()}): {item.strip()}"


# The options of a choice ("nothing else: positive: the customer is pleased; negative:
# ..."): their meanings are no part of the instruction's form.
_OPTIONS = re.compile(r"(?<=:)\s*(?:[\w-]{1,20}: [^;]+(?:;\s*|$)){2,}$")


_OUTSIDE = re.compile(r"\boutside (?:of )?(?P<low>\d+) (?:to|and|-) (?P<high>\d+)\b", re.I)
# A rule that quotes its instruction, as the stepwise rules do ("The output follows this
# instruction from the prompt: ...") or as a large model said it.
_QUOTING = re.compile(
    r"^the output (?:follows|obeys|complies with|does what) (?:this|the) instruction"
    r"(?: (?:from|of|in) the prompt)?:\s*",
    re.I,
)


def instruction_of(text: str) -> str:
    """A rule's instruction: the prompt's words of a rule kept as written, without the
    meanings of the options it lists."""
    text = _QUOTING.sub("", text.removeprefix(AS_WRITTEN).strip())
    return _OPTIONS.sub("", text.strip()).strip()


def _conditional(text: str) -> str | None:
    """ "If the message is empty, write a haiku about silence." -> "When the message is
    empty, the output does not do what the prompt asks then: write a haiku about
    silence."; a dictated answer ("If there are no contacts, answer [].") -> "... the
    output is something other than []"."""
    from promptgen.prompting.behaviours import _condition_cases, _dictated

    sentences = re.split(r"(?<=[.!?])\s+", text.strip())
    if len(sentences) != 1:
        return None
    cases = _condition_cases(sentences[0])
    if not cases or cases[0].word not in ("if", "when", "whenever", "where"):
        return None
    case = cases[0]
    if ":" in case.main or len(case.main.split()) > 25:
        return None  # the case closes a longer instruction: its other forms go first
    output, label = _dictated(case.main)
    if output is not None:
        return f"When {case.condition}, the output is something other than {output}."
    if label is not None:
        return f"When {case.condition}, the output does not start with {label}."
    return f"When {case.condition}, the output does not do what the prompt asks then: {case.main}."


# A template branch's condition, as stepwise sources state it ('When breaking is set:').
_BRANCH = re.compile(r"^(?P<when>When [^:]{1,80}|Otherwise):\s+(?=\S)")


def by_form(rule_text: str, source: str | None = None) -> str | None:
    """The inverse the rule's form gives, or None where it has no form to go by. A
    template branch's condition stays the inverse's condition."""
    text = instruction_of(source or rule_text)
    branch = _BRANCH.match(text)
    if branch:
        text = text[branch.end() :]
    for make in (_criterion, _conditional, _prohibition, _limit, _format):
        inverse = make(text)
        if inverse:
            if branch:
                said = inverse[0].lower() + inverse[1:]
                return f"{branch.group('when')}, {said}"
            return inverse
    return None


# Words that turn a statement around (an inverse needs another count of them than its
# rule, or another number, or a word of contrast, or to assert an act the rule forbids).
_NEGATIVE = re.compile(
    r"\b(?:not|no|never|none|nothing|without|neither|nor|avoid\w*|omit\w*|lack\w*|miss\w*|"
    r"fail\w*|break\w*|violat\w*|ignor\w*|overlook\w*|instead|outside|cannot|"
    r"leav\w* out)\b(?!\s+(?:longer|only)\b)\s*(?P<next>\w*)|\bother than\b\s*(?P<after>\w*)",
    re.I,
)
_COMPARISONS = frozenset({"more than", "fewer than", "less than", "or more", "or fewer"})
_CONTRAST = re.compile(
    r"\b(other than|instead of|outside|more than|fewer than|less than|or more|or fewer|"
    r"or longer|or shorter|capital|several|extra|wrong|another|different|"
    r"too (?:long|short|many|few))\b",
    re.I,
)


def _negations(text: str) -> list[str]:
    """Each negation with the word after it ("no entries", "never guess")."""
    found = []
    for match in _NEGATIVE.finditer(text):
        word = match.group(0).split()[0].lower()
        after = (match.group("next") or match.group("after") or "").lower()
        found.append(f"{word} {after}")
    return found


def _polarity(text: str, shared: set[str]) -> int:
    """The count of negations, leaving out those both texts say alike ("a heading with
    no entries" is in the rule and in its inverse), modulo 2."""
    return sum(n not in shared for n in _negations(text)) % 2


def _numbers(text: str) -> set[str]:
    words = re.findall(r"[a-z]+|\d+", text.lower())
    return {str(_NUMBER_WORDS.get(w, w)) for w in words if w.isdigit() or w in _NUMBER_WORDS}


def _asserts_forbidden(inverse: str, rule: str) -> bool:
    """The inverse says the output does an act the rule forbids ("The output guesses an
    email address" for "never guess an email address"), not negated."""
    if _negations(inverse) and not set(_negations(inverse)) <= set(_negations(rule)):
        return False
    said = content_words(inverse)
    for act in forbidden(rule):
        words = content_words(act) - {"inclu", "use", "add"}
        if words and len(words & said) >= max(1, (len(words) + 1) // 2):
            return True
    return False


_DENIED_LITERAL = re.compile(
    r"\b(?:not|other than|never)\b(?:\s+\w+){0,3}?\s+(?P<literal>\"[^\"]+\"|“[^”]+”|\[\]|\{\}|"
    r"(?-i:[A-Z][A-Z0-9_]{2,}\b))",
    re.I,
)


def _denies_literal(inverse: str, rule: str) -> bool:
    """The inverse denies a literal the rule requires ("does not start with
    CANNOT_ANSWER", "something other than []")."""
    return any(m.group("literal") in rule for m in _DENIED_LITERAL.finditer(inverse))


def contradicts(inverse: str, rule: str) -> bool:
    """Whether `inverse` describes outputs that break `rule`: it shares a content word
    with the rule and asserts an act the rule forbids, or differs from it in polarity or
    numbers, or names a contrast."""
    rule = instruction_of(rule)
    inverse = inverse.strip()
    outside = _OUTSIDE.search(inverse)
    if outside and {outside.group("low"), outside.group("high")} <= _numbers(rule):
        return True  # a scale's inverse: no score, or one outside the rule's range
    if not content_words(inverse) & content_words(rule):
        return False
    if _asserts_forbidden(inverse, rule) or _denies_literal(inverse, rule):
        return True
    shared = set(_negations(inverse)) & set(_negations(rule))
    if _polarity(inverse, shared) != _polarity(rule, shared):
        return True
    said, numbers = _numbers(rule), _numbers(inverse) - {"1"}
    if said and numbers and _numbers(inverse) != said:
        return True  # another bound: "more than 3" for "at most two"
    contrast = _CONTRAST.search(inverse)
    if contrast and contrast.group(1).lower() in _COMPARISONS and numbers and not said:
        # a bound the rule does not have is invented, not turned around: "a short
        # summary, typically less than 100 words" for "a concise summary"
        return False
    return bool(contrast) and not _CONTRAST.search(rule)
