"""Is a generated test input a valid test? Checked without a model, before a test is kept.

A generated input is refused when it holds template syntax (`{{review}}`: the prompt's
placeholder copied), copies the prompt's own text or the case description it was written
for, repeats the author's sample, is empty where nothing asked for an empty value, does
not fit its declared type, enum or the shape of its sample, or is a near-duplicate of
another test's input (the same words once stop words are set aside, or token-sort
similarity of 85 or more). The reason is one short phrase, recorded where the test is
dropped.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable
from typing import Any

from promptgen.model import PromptInput, PromptUnderTest
from promptgen.prompting.sample_shape import (
    RENDERED_WORDS,
    opens_with_prompt,
    rendered,
    unlike_sample,
)

# Near-duplicate inputs: token-sort similarity (0-100) at or above this.
SIMILAR_INPUTS = 85
# Inputs that open alike: at most this many tests' inputs may open with the same first
# OPENING_WORDS words (an input of at least OPENING_FROM words). 14 of the 1.5B's 21
# questions for an SQL prompt opened "What is the total ..." or "What was the total
# ...", each too unlike the others in its wording to be a near-duplicate.
SAME_OPENING, OPENING_WORDS, OPENING_FROM = 2, 4, 8
# A copied passage: this many consecutive words of the prompt's own text.
COPIED_WORDS = 8

_TEMPLATE = re.compile(r"\{\{|\}\}|\{%|%\}|\{#|#\}|\$\{|</?PROMPT>")
# A form letter's blanks: "Dear [Name]", "<company>", "[your email]".
_BLANK = re.compile(
    r"[\[<](?:your |the |first |last |full )?(?:name|role|title|company|organi[sz]ation|email|"
    r"e-mail|phone|phone number|address|date|product|customer|recipient|sender|city|country|"
    r"number|position|department)[\]>]"
    # any bracketed field: "[order number]", "[Customer Name]", "[tracking link]"
    r"|\[(?:[\w-]+ ){0,3}(?:name|number|email|e-mail|address|date|phone|company|product|"
    r"title|id|link|url|amount|price|code)\](?!\()",
    re.I,
)
# A form's blank in title case: "[Your Company]", "[Support Team]" (not a link's text);
# or two one-word ones in any language: "Ik ben [Naam], [Rol], van [Organisatie]".
_TITLED_BLANK = re.compile(
    r"\[[A-Z][a-z]+(?: [A-Z][a-z]+){1,3}\](?!\()"
    r"|\[[A-Z][a-zà-ÿ]+\](?!\()(?=.*\[[A-Z][a-zà-ÿ]+\](?!\())",
    re.S,
)
# Stand-ins for content: "Sample Product", "Product A", "new feature X", "Hello, World!",
# a value that is only a field's name ("Product Name") or one letter.
_FILLER = re.compile(
    r"\b(?i:sample|example|dummy|placeholder|generic|fake) (?i:product|title|item|name|"
    r"company|text|value|data|document|feature|change|review|message|phone number|"
    r"email address|address|contact)s?\b"
    # a slot for content: "Your signature goes here", "[email protected]" (a web page's
    # hidden address, copied from a crawl)
    r"|\b(?i:goes|go) here\b|\[(?i:email protected)\]"
    # a slot in brackets: "[Customer's Name]", "[Order Number]", "[Your Email]" (not a
    # link's text: "[docs](...)")
    r"|\[(?i:[\w' ]{0,30}?(?:name|number|email|address|date|phone|company|product|link|url|"
    r"signature|amount))\](?!\()"
    r"|\b(?i:hello),? (?i:world)\b|\b(?i:lorem ipsum)\b|\b(?i:the quick brown fox)\b"
    r"|\b(?:[Pp]roduct|[Ii]tem|[Cc]ompany|[Ff]eature|[Cc]hange|[Cc]ustomer|[Uu]ser) ?[A-Z]\b"
    r"|^(?i:(?:the )?(?:product|item|company|customer|user|file|field) ?(?:name|title|id))$"
    r"|^(?i:(?:new|my|sample|test|your|the) ?(?:product|app|application|project|tool|service))$"
    r"|^[A-Za-z]$"  # one letter for a whole value: "A", "B"
    r"|^\W*(?i:hello|hi|test|testing|foo|bar|foobar)\W*$"  # a greeting or "test" for a value
)
_STOP_WORDS = frozenset(
    """a an the and or but of to in on at for with by from as is are was were be been it
    its this that these those i me my we our you your he she they them their his her not
    no so very just also than then there here what which who whom do does did have has
    had will would can could should may might must""".split()  # noqa: SIM905
)


def _strings(value: Any) -> list[str]:
    """Every string inside a value (lists and objects walked)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)] + [
            k for k in value if isinstance(k, str)
        ]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _norm(text: str) -> str:
    return " ".join(re.findall(r"[^\W_]+", text.lower()))


def text_of(inputs: dict[str, Any]) -> str:
    """The inputs as one text, in name order (for likeness)."""
    return " ".join(
        v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, sort_keys=True)
        for _, v in sorted(inputs.items())
    )


def content_set(text: str) -> frozenset[str]:
    return frozenset(w for w in _norm(text).split() if w not in _STOP_WORDS)


Shared = dict[str, frozenset[str]]


def value_key(value: Any) -> str:
    """A value as one comparable text (a structure as sorted JSON)."""
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def _unshared(inputs: dict[str, Any], shared: Shared | None) -> dict[str, Any]:
    """`inputs` without the values an author's sample gives every test alike (the
    article a question is about): two questions about one article are two tests."""
    if not shared:
        return inputs
    return {n: v for n, v in inputs.items() if value_key(v) not in shared.get(n, ())}


def near_duplicate_inputs(
    a: dict[str, Any], b: dict[str, Any], shared: Shared | None = None
) -> bool:
    """The same inputs in other words: equal once normalised, the same content words,
    or a token-sort similarity of at least 85 (values in `shared` set aside)."""
    raw_a, raw_b = (" ".join(text_of(_unshared(x, shared)).split()) for x in (a, b))
    if raw_a == raw_b:
        return True
    ta, tb = _norm(raw_a), _norm(raw_b)
    if not ta or not tb:  # "" and "!?!": both without words, yet two inputs
        return False
    if ta == tb:
        return True
    wa, wb = content_set(ta), content_set(tb)
    if wa and wa == wb:
        return True
    if not wa or not wb:
        return False
    from rapidfuzz import fuzz

    return fuzz.token_sort_ratio(ta, tb) >= SIMILAR_INPUTS


class InputIndex:
    """Inputs already in a suite, for finding a near-duplicate of a new one quickly (the
    normalised texts and word sets kept; the similarity scan in rapidfuzz's C loop)."""

    def __init__(
        self,
        inputs: Iterable[dict[str, Any]] = (),
        names: list[str] | None = None,
        shared: Shared | None = None,
    ) -> None:
        self.names = names
        self.shared = shared
        self.raw: dict[str, int] = {}
        self.norms: list[str] = []
        self.sets: dict[frozenset[str], int] = {}
        self.openings: dict[tuple[str, str], int] = {}
        for one in inputs:
            self.add(one)

    def _texts(self, inputs: dict[str, Any]) -> tuple[str, str]:
        if self.names is not None:
            inputs = {n: inputs.get(n) for n in self.names}
        raw = " ".join(text_of(_unshared(inputs, self.shared)).split())
        return raw, _norm(raw)

    def add(self, inputs: dict[str, Any]) -> None:
        raw, norm = self._texts(inputs)
        position = len(self.norms)
        self.raw.setdefault(raw, position)
        self.norms.append(norm)
        words = content_set(norm)
        if words:
            self.sets.setdefault(words, position)
        for key in self._openings(inputs):
            self.openings[key] = self.openings.get(key, 0) + 1

    def _openings(self, inputs: dict[str, Any]) -> list[tuple[str, str]]:
        """(input, its first words) for each text input long enough to compare openings."""
        if self.names is not None:
            inputs = {n: inputs.get(n) for n in self.names}
        found = []
        for name, value in _unshared(inputs, self.shared).items():
            words = _norm(value).split() if isinstance(value, str) else []
            if len(words) >= OPENING_FROM:
                found.append((name, " ".join(words[:OPENING_WORDS])))
        return found

    def crowded_opening(self, inputs: dict[str, Any]) -> str | None:
        """The opening `inputs` would share with SAME_OPENING tests already, or None."""
        for key in self._openings(inputs):
            if self.openings.get(key, 0) >= SAME_OPENING:
                return key[1]
        return None

    def find(self, inputs: dict[str, Any]) -> int | None:
        """The position of an input this one near-duplicates, or None."""
        raw, norm = self._texts(inputs)
        if raw in self.raw:
            return self.raw[raw]
        if not norm:  # "" and "!?!": inputs without words are only ever equal
            return None
        words = content_set(norm)
        if words and words in self.sets:
            return self.sets[words]
        from rapidfuzz import fuzz, process

        found = process.extractOne(
            norm, self.norms, scorer=fuzz.token_sort_ratio, score_cutoff=SIMILAR_INPUTS,
            processor=None,
        )  # fmt: skip
        if found is None or (not found[0] and not norm):
            return None
        _, _, position = found
        return position if self.norms[position] else None


def placeholder(value: Any, names: list[str]) -> str | None:
    """The template syntax a value holds ("{{review}}", "<review>", "{review}"), or None."""
    markers = [m for n in names for m in (f"<{n}>", f"{{{n}}}", f"[{n}]")]
    for text in _strings(value):
        found = _TEMPLATE.search(text) or _BLANK.search(text) or _TITLED_BLANK.search(text)
        if found:
            return found.group(0)
        lowered = text.lower()
        for marker in markers:
            if marker.lower() in lowered:
                return marker
    return None


def _windows(words: list[str], size: int) -> set[str]:
    return {" ".join(words[i : i + size]) for i in range(len(words) - size + 1)}


# A short text (a case, a description) is copied by a run of this many of its words.
COPIED_SHORT = 4


def copies(value: Any, text: str, run: int = COPIED_WORDS) -> bool:
    """Whether a value copies `text`: a run of `run` (8) words of it (of 4, when the text
    itself is shorter: "stuffed with repeated keywords" written as the title for the case
    "the title is stuffed with repeated keywords"), or the whole of a value of at least 3
    words found in it."""
    source = _norm(text)
    if not source:
        return False
    size = run if len(source.split()) >= run else COPIED_SHORT
    windows = _windows(source.split(), size)
    for part in _strings(value):
        words = _norm(part).split()
        if len(words) >= 3 and f" {' '.join(words)} " in f" {source} ":
            return True
        if len(words) >= size and _windows(words, size) & windows:
            return True
    return False


# A value this long is content a test is about; a shorter one (a product name, a
# version, a list of field names) may well repeat the author's default.
SUBSTANTIAL_WORDS = 6


def _only_words_of(
    value: Any, spec: PromptInput | None, case: str, inputs: dict[str, Any], name: str
) -> bool:
    """A short free-text value made only of words the writer was given: the case's or
    the test's other short inputs' ("Clothing" as the title of category "Clothing",
    "Vague" for "the title is too vague")."""
    if not isinstance(value, str) or (spec is not None and spec.enum):
        return False
    words = content_set(value)
    if not words or len(_norm(value).split()) > SUBSTANTIAL_WORDS:
        return False
    beside = [v for n, v in inputs.items() if n != name and not _substantial(v)]
    given = frozenset().union(*(content_set(t) for v in [case, *beside] for t in _strings(v)))
    return words <= given


def _substantial(value: Any) -> bool:
    return len(_norm(" ".join(_strings(value))).split()) >= SUBSTANTIAL_WORDS


def _empty(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, str):
        return not value.strip()
    if isinstance(value, list | dict):
        return not value
    return False


_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "str": (str,),
    "text": (str,),
    "number": (int, float),
    "integer": (int,),
    "int": (int,),
    "boolean": (bool,),
    "bool": (bool,),
    "array": (list,),
    "list": (list,),
    "object": (dict,),
}


def fits(value: Any, spec: PromptInput) -> bool:
    """Whether a value is of the input's declared kind: one of its enum, of its type,
    shaped like its sample (a list of objects with the sample's keys)."""
    if spec.enum:
        return value in spec.enum
    example = spec.example
    if example is not None:
        return _shaped_like(value, example)
    kinds = _TYPES.get(spec.type.lower())
    if kinds is None:
        return True
    if bool in kinds:
        return isinstance(value, bool)
    return isinstance(value, kinds) and not (isinstance(value, bool) and bool not in kinds)


def _shaped_like(value: Any, example: Any) -> bool:
    if isinstance(example, bool):
        return isinstance(value, bool)
    if isinstance(example, int | float):
        return isinstance(value, int | float) and not isinstance(value, bool)
    if isinstance(example, str):
        return isinstance(value, str)
    if isinstance(example, list):
        if not isinstance(value, list):
            return False
        return not example or all(_shaped_like(v, example[0]) for v in value)
    if isinstance(example, dict):
        return isinstance(value, dict) and set(example) <= set(value)
    return True


def _is_diff(text: str) -> bool:
    """A unified diff: a hunk header, and a line added or removed with something on it."""
    lines = text.splitlines()
    return any(line.startswith("@@") for line in lines) and any(
        line[:1] in "+-" and not line.startswith(("+++", "---")) and line[1:].strip()
        for line in lines
    )


def _broken_diff(value: Any, example: Any) -> bool:
    """Where the author's sample is a unified diff, a value that is not one: no hunk
    header, no added or removed line, or a hunk cut short with "..." (the 1.5B wrote
    the sample's header over a few context lines, or over nothing, for 7 of 17 tests)."""
    if not (isinstance(example, str) and isinstance(value, str) and _is_diff(example)):
        return False
    lines = value.splitlines()
    return not _is_diff(value) or any(line.strip() in ("...", "…") for line in lines)


def problem(
    inputs: dict[str, Any],
    prompt: PromptUnderTest,
    names: list[str],
    *,
    others: Iterable[dict[str, Any]] | InputIndex = (),
    case: str = "",
    allowed_empty: frozenset[str] = frozenset(),
    small_writer: bool = False,
) -> str | None:
    """Why generated `inputs` cannot be a test (one short phrase), or None when valid.

    `names` are the inputs the generator wrote; `others` the inputs of the tests already
    kept (and the author's samples); `case` the description the input was written for;
    `allowed_empty` inputs the case itself leaves empty; `small_writer` (stepwise) also
    refuses what a small writer does and a large one does not: a third input that opens
    like two others, a diff that changes no line, a short value made only of the words
    it was given."""
    prompt_words = "\n".join(m.content for m in prompt.messages if m.content)
    own_parts = rendered(prompt) if small_writer else []
    for name in names:
        value = inputs.get(name)
        spec = prompt.inputs.get(name)
        if _empty(value):
            if name in allowed_empty:
                continue
            return f"{name} is empty"
        found = placeholder(value, list(prompt.inputs))
        if found:
            return f"{name} holds template syntax ({found})"
        if isinstance(value, str) and _norm(value) == _norm(name.replace("_", " ")):
            return f"{name} holds only its own name"
        if spec is not None and _only_opening(value, spec.sample):
            return f"{name} holds only the opening of the author's sample"
        filler = next((m for t in _strings(value) if (m := _FILLER.search(t.strip()))), None)
        if filler and not _chosen(value, spec):
            return f"{name} holds a stand-in for content ({filler.group(0)})"
        looped = next((line for t in _strings(value) if (line := loops(t))), None)
        if looped:
            return f"{name} repeats itself over and over ({looped[:40]!r})"
        if copies(value, prompt_words):
            return f"{name} copies the prompt's own text"
        if small_writer and (
            opens_with_prompt(value, prompt)
            or any(copies(value, part, RENDERED_WORDS) for part in own_parts)
        ):
            return f"{name} copies the prompt's own text"
        if case and copies(value, case):
            return f"{name} copies the case it was written for"
        if small_writer and _only_words_of(value, spec, case, inputs, name):
            return f"{name} only repeats words of the case or of the other inputs"
        if spec is not None and spec.description and copies(value, spec.description):
            return f"{name} copies the input's description"
        if spec is not None:
            for example in (spec.sample, spec.default):
                if (
                    example is not None
                    and _substantial(value)
                    and _norm(text_of({name: value})) == _norm(text_of({name: example}))
                ):
                    return f"{name} repeats the author's sample"
            if not fits(value, spec):
                return f"{name} is not of the declared kind ({_kind(spec)})"
            if small_writer and _broken_diff(value, spec.example):
                return f"{name} is not of the declared kind (a diff that changes a line)"
            if small_writer:
                samples = [spec.example, *(t.inputs.get(name) for t in prompt.test_samples)]
                why = unlike_sample(value, samples, case, spec.description or "")
                if why:
                    return f"{name} {why}"
    index = others if isinstance(others, InputIndex) else InputIndex(list(others), names)
    if index.find(inputs) is not None:
        return "a near-duplicate of another test's input"
    opening = index.crowded_opening(inputs) if small_writer else None
    if opening is not None:
        return f"opens like {SAME_OPENING} other tests' inputs ({opening!r} ...)"
    return None


# A line (or sentence) that comes back this often, and makes up this share of a text's
# lines, is a small model looping, not a value anyone would send (the 1.5B wrote diffs of
# one `return` line eight times over, and "@@ -12,7 +12,9 @@" hunk headers with nothing
# between them).
LOOP_REPEATS, LOOP_SHARE, LOOP_MIN_CHARS = 3, 1 / 3, 8


# One word making up half of a text of this many words or more is a loop too ("AAA BBB
# BBB BBB ..." for a title stuffed with keywords).
LOOP_WORDS = 20
LOOP_GRAM = 4


def loops(text: str) -> str | None:
    """The line, sentence or word `text` repeats over and over, or None."""
    words = text.split()
    if len(words) >= LOOP_WORDS:
        word, count = Counter(w.lower() for w in words).most_common(1)[0]
        if count >= len(words) / 2:
            return word
        # a phrase: "von der Rückgabe der Bestellungen" twenty times over
        grams = Counter(" ".join(words[i : i + LOOP_GRAM]) for i in range(len(words)))
        phrase, count = grams.most_common(1)[0]
        if count >= LOOP_REPEATS + 1 and count * LOOP_GRAM >= len(words) / 3:
            return phrase
    for parts in (text.splitlines(), re.split(r"(?<=[.!?])\s+", text)):
        kept = [" ".join(p.split()) for p in parts if len(p.strip()) >= LOOP_MIN_CHARS]
        if len(kept) < LOOP_REPEATS:
            continue
        line, count = Counter(kept).most_common(1)[0]
        if count >= LOOP_REPEATS and count >= LOOP_SHARE * len(kept):
            return line
    return None


# The lines of a text sample a writer is shown for its form (`writing.example_of`).
OPENING_LINES = 3


def _only_opening(value: Any, sample: Any) -> bool:
    """A value that is the first lines of a longer sample, with at most two words of its
    own after them ("--- a/app.py ... @@ -12,7 @@" then "..."): the form the writer was
    shown, given back."""
    if not isinstance(value, str) or not isinstance(sample, str):
        return False
    lines = sample.splitlines()
    if len(lines) <= OPENING_LINES:
        return False
    opening = _norm("\n".join(lines[:OPENING_LINES]))
    text = _norm(value)
    return bool(opening) and text.startswith(opening) and len(text[len(opening) :].split()) <= 2


def _chosen(value: Any, spec: PromptInput | None) -> bool:
    """A value the input's declaration allows as it is: one of its enum, or its sample's
    or default's own value ("A" for a grade)."""
    if spec is None:
        return False
    allowed = [*(spec.enum or []), spec.sample, spec.default]
    return any(value == a for a in allowed if a is not None)


def _kind(spec: PromptInput) -> str:
    if spec.enum:
        return "one of " + ", ".join(map(str, spec.enum))
    return spec.type


_KINDS = (
    ("template syntax", "template_syntax"),
    ("copies", "copied_text"),
    ("repeats the author's sample", "copied_text"),
    ("is empty", "empty"),
    ("declared kind", "wrong_kind"),
    ("near-duplicate", "near_duplicate"),
    ("opens like", "same_opening"),
    ("describes itself", "self_description"),
    ("stand-in", "filler"),
    ("over and over", "looping"),
    ("its own name", "filler"),
    ("opening of the author's sample", "copied_text"),
    ("only repeats words", "copied_text"),
    ("too short to test with", "too_short"),
    ("in another language", "other_language"),
    ("which its case names", "content_missing"),
    ("which its case is about", "content_missing"),
)


def kind_of(reason: str) -> str:
    """The count a dropped input is booked under: `dropped_<kind>` in the stage's counts."""
    return next((kind for words, kind in _KINDS if words in reason), "other")
