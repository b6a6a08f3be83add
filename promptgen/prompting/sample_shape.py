"""Is a small writer's value shaped like the author's sample? Checked without a model.

Three habits of the 1.5B writer that the rubric's raters would not keep, each refused in
stepwise mode only (a large writer does not have them, and the scripted fakes write
values these checks would wrongly refuse):

- **a text in another language** than the author's sample, when nothing asked for one
  (the input's description, translated into French, as a support draft);
- **a text far shorter than the sample** where the rule needs a real one ("I like dogs."
  as the text to summarise in at most three sentences), unless the case asks for a short
  or empty one;
- **the prompt's own words, rendered**: "Summarize this text for a general reader: ..."
  opens a text, the prompt's line with its `{{audience}}` filled in.
"""

from __future__ import annotations

import re
from typing import Any

from promptgen.model import PromptUnderTest

# Words frequent in one language and rare in the others: a text is in the language whose
# words it uses most, once it uses at least LANGUAGE_HITS of them.
_LANGUAGE_WORDS: dict[str, frozenset[str]] = {
    name: frozenset(words.split())
    for name, words in {
        "English": "the and is are was with you your for this that have not what of to",
        "French": "le la les est et un une des du au pour avec vous votre nous pas que qui dans"
        " sur je très",
        "German": "der die das und ist nicht ein eine mit für sie wir ich auf den dem zu",
        "Spanish": "el los las es y una por para con usted no que del en su muy está",
        "Italian": "il lo gli della è e una per con non che di del sono molto questo",
        "Portuguese": "o os as é e uma por para com você não que do da em seu muito",
        "Dutch": "de het een is en niet van voor met u wij ik op dat zijn naar",
    }.items()
}
LANGUAGE_HITS = 3
_LANGUAGE_NAMES = re.compile(
    r"\b(?:English|French|German|Spanish|Italian|Portuguese|Dutch|Japanese|Chinese|Korean|"
    r"Russian|Arabic|Polish|Swedish|Turkish|Hindi)\b",
    re.I,
)
_ANY_LANGUAGE = re.compile(
    r"\b(?:any|other|several|many|different) languages?\b|\bmultilingual\b", re.I
)

# A sample of at least this many words is a text a rule is about; a written value needs
# a sixth of its length (and SHORT_FLOOR words) unless the case asks for a short one.
LONG_SAMPLE, SHORT_SHARE, SHORT_FLOOR = 20, 6, 4
_SHORT_CASE = re.compile(
    r"\b(?:short|shorter|brief|empty|blank|punctuation|one word|single word|two to five|"
    r"few words|only a|only one|a word)\b",
    re.I,
)
# The prompt's own words rendered: a run of this many words of them.
RENDERED_WORDS = 6
# A filled-in value at most this long reads as part of the prompt's line ("general" in
# "for a {{audience}} reader"); a longer one (an article) is the test's content.
_FILLED_WORDS = 3
_VARIABLE = re.compile(r"\{\{\s*(\w+)\s*\}\}|\{(\w+)\}")
_BREAK = "\x00"  # not a word: no run of words crosses it


def _words(text: str) -> list[str]:
    return re.findall(r"[^\W\d_]+", text.lower())


def language_of(text: str) -> str | None:
    """The language a text's common words say it is in, or None (too few to tell)."""
    words = _words(text)
    hits = {name: sum(w in common for w in words) for name, common in _LANGUAGE_WORDS.items()}
    best = max(hits, key=lambda name: hits[name])
    if hits[best] < LANGUAGE_HITS or sorted(hits.values())[-2] * 2 > hits[best]:
        return None
    return best


def _asks_language(case: str, description: str, theirs: str) -> bool:
    """Whether the case or the input's description names a language other than the
    sample's ("the review is written in Italian"; "Emails may be in English, German or
    French"; not "written in English"), or any language."""
    if any(_ANY_LANGUAGE.search(t) for t in (case, description)):
        return True
    named = {w.lower() for t in (case, description) for w in _LANGUAGE_NAMES.findall(t)}
    return bool(named - {theirs.lower()})


def unlike_sample(value: Any, samples: list[Any], case: str, description: str = "") -> str | None:
    """How a written text is unlike the author's samples of its input (its `sample`, the
    test data's values): a phrase after the input's name, or None."""
    texts = [s for s in samples if isinstance(s, str) and s.strip()]
    if not isinstance(value, str) or not texts:
        return None
    sample = min(texts, key=lambda s: len(s.split()))
    sample_words, value_words = len(sample.split()), len(value.split())
    if sample_words >= LONG_SAMPLE and not _SHORT_CASE.search(case):
        least = max(SHORT_FLOOR, sample_words // SHORT_SHARE)
        if value_words < least:
            return f"is too short to test with ({value_words} words; the sample has {sample_words})"
    language, theirs = language_of(value), language_of(sample)
    if language and theirs and language != theirs and not _asks_language(case, description, theirs):
        return f"is in {language}, and nothing asked for a text in another language than {theirs}"
    return None


def rendered(prompt: PromptUnderTest) -> list[str]:
    """The prompt's own text in parts, each short author's value filled in for its
    placeholder ("for a general reader"); a long value (an article) or an unknown one
    ends a part instead, so that a run of words in a part is the prompt's own. Parts
    shorter than a run are left out."""
    parts: list[str] = []

    def fill(found: re.Match[str]) -> str:
        spec = prompt.inputs.get(found.group(1) or found.group(2) or "")
        value = spec.example if spec is not None else None
        if isinstance(value, str) and len(value.split()) <= _FILLED_WORDS:
            return value
        return _BREAK

    for message in prompt.messages:
        if message.content:
            parts += _VARIABLE.sub(fill, message.content).split(_BREAK)
    return [p for p in parts if len(_words(p)) >= RENDERED_WORDS]


# A value that opens with this many words of a line of the prompt's own opens with the
# prompt ("Summarize this text for a ..." where the line goes on with `{{audience}}`).
OPENING_RUN = 4


def opens_with_prompt(value: Any, prompt: PromptUnderTest) -> bool:
    """Whether a text opens with a line of the prompt's own text (up to the line's first
    placeholder, at least OPENING_RUN words of it)."""
    if not isinstance(value, str):
        return False
    opening = _words(value)
    for message in prompt.messages:
        for line in (message.content or "").splitlines():
            head = _words(_VARIABLE.split(line, maxsplit=1)[0])
            run = min(len(head), len(opening))
            if run >= OPENING_RUN and opening[:run] == head[:run]:
                return True
    return False


def without_lead_in(value: Any, prompt: PromptUnderTest) -> Any:
    """`value` without a line of the prompt's own that it opens with, the line's
    placeholders filled in any way ("Summarize this text for a general reader: The
    council voted ..." is the text "The council voted ..."): the 1.5B writer opened 3 of
    summarize's 25 texts so, each a real text after the line. A value that is only the
    line, or opens with no line of the prompt's, is returned as it is."""
    if not isinstance(value, str) or not opens_with_prompt(value, prompt):
        return value
    for pattern in _lead_ins(prompt):
        found = pattern.match(value)
        rest = value[found.end() :].strip().strip("\"'“”") if found else ""
        if len(_words(rest)) >= OPENING_RUN:
            return rest
    return value


def _lead_ins(prompt: PromptUnderTest) -> list[re.Pattern[str]]:
    """Each line of the prompt up to its last literal word, as a pattern in which a
    placeholder matches a short value and spaces match any spaces."""
    patterns = []
    for message in prompt.messages:
        for line in (message.content or "").splitlines():
            parts = _VARIABLE.split(line)[::3]  # the literal text between placeholders
            while parts and not parts[-1].strip():
                parts.pop()
            if not parts or len(_words(" ".join(parts))) < OPENING_RUN:
                continue
            literal = [r"\s+".join(map(re.escape, part.split())) for part in parts]
            body = r"\s*.{1,60}?\s*".join(literal)
            patterns.append(re.compile(r"\s*" + body + r"[\s:.-]*", re.I | re.S))
    return patterns


# What a content behaviour names, and how a text that holds one looks: "the document
# contains phone numbers" asks for a run of digits, not "Dear John Doe, I am writing to
# request a loan" (the 1.5B's text for it).
_CONTENT_SHAPES: tuple[tuple[re.Pattern[str], str, re.Pattern[str]], ...] = (
    (re.compile(r"\bphone numbers?\b|\btelephone\b", re.I), "phone number",
     re.compile(r"\+?\d[\d ().-]{5,}\d")),
    (re.compile(r"\be-?mail addresse?s?\b", re.I), "e-mail address",
     re.compile(r"[\w.+-]+@[\w-]+\.[\w.]+")),
    (re.compile(r"\blinks?\b|\burls?\b", re.I), "link",
     re.compile(r"https?://|www\.|\b[\w-]+\.(?:com|org|net|io|de|fr|co)\b", re.I)),
    (re.compile(r"\b(?:order|tracking) numbers?\b", re.I), "order or tracking number",
     re.compile(r"\b[A-Z]{0,4}-?\d{3,}\b|#\d+")),
    (re.compile(r"\bamounts?\b|\bprices?\b", re.I), "amount",
     re.compile(r"[$€£¥]\s?\d|\d\s?(?:[$€£¥]|EUR|USD|GBP|dollars?|euros?|pounds?)\b|\b\d+[.,]\d{2}\b",
                re.I)),
    (re.compile(r"\bdates?\b|\bdeadlines?\b", re.I), "date",
     re.compile(r"\b(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*\b|"
                r"\b(?:Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)day\b|\b\d{1,4}[./-]\d{1,2}[./-]\d{1,4}\b|"
                r"\b(?:tomorrow|today|next week|within \d+ (?:days|working days|hours))\b", re.I)),
)  # fmt: skip


def content_missing(case: str, value: Any) -> str | None:
    """What a content case names that the written text holds none of ("phone number"),
    or None: of the kinds the case names, at least one is there in its usual form ("facts,
    amounts, dates" asks for an amount or a date)."""
    if not isinstance(value, str):
        return None
    named = [(what, shape) for names, what, shape in _CONTENT_SHAPES if names.search(case)]
    if named and not any(shape.search(value) for _, shape in named):
        return " or ".join(what for what, _ in named)
    return None


# A case about a subject: "the review talks about nothing but the delivery company".
_ABOUT = re.compile(
    r"\b(?:talks|is|are|speaks|writes) (?:only |mostly |just )?(?:about|of) (?P<what>.+)$"
    r"|\b(?:mentions|refers to|names) (?P<named>.+)$",
    re.I,
)
_NOT_TOPIC = frozenset(
    """nothing but only both and or the a an its their it else either neither other
    something anything everything else's""".split()  # noqa: SIM905
)


def topic_missing(case: str, value: Any) -> str | None:
    """The subject a case is about that the written text never names ("the delivery
    company"), or None: one of the subject's words must be in the text (the 1.5B's
    "review about nothing but the delivery company" was about a slow product)."""
    found = _ABOUT.search(case)
    if not found or not isinstance(value, str):
        return None
    subject = (found.group("what") or found.group("named") or "").strip(" .")
    said = set(_words(value))
    # "both the product or service and the delivery company": the side the prompt
    # singles out is named (the product may well be "the blender")
    if subject.lower().startswith("both "):
        subject = re.split(r"\s+and\s+", subject)[-1]
    words = [w for w in _words(subject) if w not in _NOT_TOPIC and len(w) > 2]
    if words and not any(w in said or w.rstrip("s") in said for w in words):
        return subject
    return None


def case_unmet(kind: str, case: str, values: list[Any]) -> str | None:
    """Why the written texts do not hold what their behaviour's case names or is about
    (a phrase), or None: a content case's kinds (`content_missing`), a condition's or
    temptation's subject (`topic_missing`); one text that holds it is enough."""
    texts = [v for v in values if isinstance(v, str)]
    if kind == "content":
        missing = [content_missing(case, t) for t in texts]
        if missing and all(missing):
            return f"the input holds no {missing[0]}, which its case names"
    elif kind in ("condition", "temptation"):
        absent = [topic_missing(case, t) for t in texts]
        if absent and all(absent):
            return f"the input never names {absent[0]}, which its case is about"
    return None
