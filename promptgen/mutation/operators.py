"""Deterministic mutation operators: small edits to a prompt's message templates.

Each operator reads one message's template and proposes `Edit`s (a span and its
replacement). Template syntax is never touched: placeholders (`{{x}}`, `{{{x}}}`,
`{x}` for str.format prompts) and Jinja blocks and comments are masked before the
operators look at the text, an edit that overlaps one is dropped, and an edited text
must keep the same template pieces (`keeps_template`).
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from promptgen.kinds import TemplateEngine

MASK = "\ue000"  # stands for template syntax while operators scan the text
_TEMPLATE = re.compile(r"\{\{\{.*?\}\}\}|\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}", re.S)
_FORMAT = re.compile(r"\{[^{}\s]*\}")
_BLOCK = re.compile(r"\{%|\{#")


@dataclass(frozen=True)
class Edit:
    """Replace content[start:end] of message `message` with `replacement`."""

    operator: str
    message: int
    start: int
    end: int
    replacement: str
    description: str

    def apply(self, content: str) -> str:
        return content[: self.start] + self.replacement + content[self.end :]


def template_spans(content: str, engine: TemplateEngine = "jinja2") -> list[tuple[int, int]]:
    """Where template syntax stands in `content` (start, end)."""
    pattern = _FORMAT if engine == "format" else _TEMPLATE
    return [m.span() for m in pattern.finditer(content)]


def masked(content: str, engine: TemplateEngine = "jinja2") -> str:
    """`content` with template syntax replaced by MASK characters (same length)."""
    chars = list(content)
    for start, end in template_spans(content, engine):
        chars[start:end] = MASK * (end - start)
    return "".join(chars)


def keeps_template(before: str, after: str, engine: TemplateEngine = "jinja2") -> bool:
    """The edited text holds the same template pieces as before (order may change)."""

    def pieces(text: str) -> Counter[str]:
        return Counter(text[s:e] for s, e in template_spans(text, engine))

    return pieces(before) == pieces(after)


def _case_like(word: str, replacement: str) -> str:
    if len(word) > 1 and word.isupper():
        return replacement.upper()
    if word[:1].isupper():
        return replacement[:1].upper() + replacement[1:]
    return replacement


_SENTENCE = re.compile(r"[^\n.!?]*[^\s.!?][^\n.!?]*(?:[.!?]+|$)", re.M)
_MARKER = re.compile(r"^[ \t]*(?:\d+[.)]|[-*+])[ \t]+", re.M)


def delete_sentence(index: int, text: str) -> Iterator[Edit]:
    """Each instruction sentence (three words or more) left out."""
    for match in _SENTENCE.finditer(text):
        start, end = match.span()
        start += len(match.group()) - len(match.group().lstrip())
        marker = _MARKER.match(text, text.rfind("\n", 0, start) + 1)
        if marker and start < marker.end():
            start = marker.end()
        sentence = text[start:end]
        if MASK in sentence or len(sentence.split()) < 3:
            continue
        line_start = text.rfind("\n", 0, start) + 1
        line_end = text.find("\n", end)
        line_end = len(text) if line_end < 0 else line_end
        rest = text[line_start:start] + text[end:line_end]
        if not rest.strip() or _MARKER.fullmatch(rest):  # the whole line (or list item) goes
            start, end = line_start, min(line_end + 1, len(text))
        else:
            while end < line_end and text[end] in " \t":
                end += 1
        yield Edit("delete-sentence", index, start, end, "", f'deleted "{sentence.strip()}"')


_NEGATIONS = {
    "must not": "must",
    "must": "must not",
    "do not": "do",
    "don't": "do",
    "does not": "does",
    "never": "always",
    "always": "never",
    "should not": "should",
    "should": "should not",
    "cannot": "can",
    "can't": "can",
    "is required": "is optional",
    "only": "not only",
}
_NUMBERS = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
    "twenty",
]
_FORMATS = {
    "json": "YAML",
    "yaml": "JSON",
    "xml": "JSON",
    "csv": "JSON",
    "html": "Markdown",
    "markdown": "plain text",
    "plain text": "Markdown",
    "uppercase": "lowercase",
    "lowercase": "uppercase",
    "upper case": "lower case",
    "lower case": "upper case",
    "bullet points": "a numbered list",
    "bulleted list": "numbered list",
    "numbered list": "bulleted list",
    "one word": "one paragraph",
    "one sentence": "three paragraphs",
    "english": "French",
}


def _words(table: dict[str, str]) -> re.Pattern[str]:
    names = sorted(table, key=len, reverse=True)  # "must not" before "must"
    return re.compile(r"\b(" + "|".join(re.escape(n) for n in names) + r")\b", re.I)


_NEGATE = _words(_NEGATIONS)
_FORMAT_WORDS = _words(_FORMATS)
_NUMBER_WORDS = _words({w: w for w in _NUMBERS[1:]})


def _table(
    operator: str, pattern: re.Pattern[str], swap: Callable[[str], str]
) -> Callable[[int, str], Iterator[Edit]]:
    def edits(index: int, text: str) -> Iterator[Edit]:
        for match in pattern.finditer(text):
            word = match.group()
            new = _case_like(word, swap(word.lower()))
            yield Edit(operator, index, *match.span(), new, f'"{word}" -> "{new}"')

    return edits


negate = _table("negate", _NEGATE, _NEGATIONS.__getitem__)
change_format = _table("format", _FORMAT_WORDS, _FORMATS.__getitem__)


def _bigger(word: str) -> str:
    """Two more ("three" -> "five"), in figures past twenty."""
    value = _NUMBERS.index(word) + 2
    return _NUMBERS[value] if value < len(_NUMBERS) else str(value)


_number_word = _table("number", _NUMBER_WORDS, _bigger)


def change_number(index: int, text: str) -> Iterator[Edit]:
    """A number word or figure changed (+2 below ten, doubled from ten): a count, a
    length, a limit. List markers ("1.") are not numbers of the prompt's task."""
    markers = [m.span() for m in _MARKER.finditer(text)]
    for match in re.finditer(r"(?<![\w.])\d+(?![\w.]|\.\d)", text):
        if any(s <= match.start() < e for s, e in markers):
            continue
        value = int(match.group())
        new = str(value + 2 if value < 10 else value * 2)
        yield Edit("number", index, *match.span(), new, f'"{match.group()}" -> "{new}"')
    yield from _number_word(index, text)


_ITEM = re.compile(r"^([ \t]*)(\d+[.)]|[-*+])[ \t]+(.*)$", re.M)


def swap_steps(index: int, text: str) -> Iterator[Edit]:
    """Two neighbouring items of a numbered or bulleted list swapped (markers stay).
    It reads the raw template: placeholders move with their item, and items holding a
    Jinja block or comment are never moved."""
    items = list(_ITEM.finditer(text))
    for first, second in itertools.pairwise(items):
        between = text[first.end() : second.start()]
        same_list = between == "\n" and first.group(1) == second.group(1)
        same_kind = first.group(2)[0].isdigit() == second.group(2)[0].isdigit()
        a, b = first.group(3), second.group(3)
        if not (same_list and same_kind) or a.strip() == b.strip() or _BLOCK.search(a + b):
            continue
        start, end = first.start(3), second.end(3)
        replacement = b + text[first.end(3) : second.start(3)] + a
        yield Edit("swap-steps", index, start, end, replacement, f'swapped "{a}" and "{b}"')


# Operators that read the masked text (they never see template syntax), then the one
# that reads the raw template.
OPERATORS: dict[str, Callable[[int, str], Iterator[Edit]]] = {
    "delete-sentence": delete_sentence,
    "negate": negate,
    "number": change_number,
    "format": change_format,
    "swap-steps": swap_steps,
}
RAW = {"swap-steps"}


def edits_of(index: int, content: str, engine: TemplateEngine = "jinja2") -> list[Edit]:
    """Every deterministic edit of one message, in operator order; an edit that would
    touch template syntax is left out."""
    text = masked(content, engine)
    found: list[Edit] = []
    for name, operator in OPERATORS.items():
        for edit in operator(index, content if name in RAW else text):
            if name not in RAW and MASK in text[edit.start : edit.end]:
                continue
            if keeps_template(content, edit.apply(content), engine):
                found.append(edit)
    return found
