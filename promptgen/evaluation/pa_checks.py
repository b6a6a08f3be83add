"""The deterministic Promptarchitect tests (property, format, language, keyword), each a
function of the output. What each one counts or accepts is in docs/promptarchitect.md.

property counts as Promptarchitect does: words `split()`, sentences the pieces between
`.`, `!` and `?`, lines the pieces between `\\n`, paragraphs the pieces between `\\n\\n`,
each without the blank pieces; characters every character. format json reuses the
is-json check and keyword the case-sensitive contains check; html, markdown and text
are validated here (Promptarchitect accepts any output as Markdown and has no text).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from html.parser import HTMLParser
from typing import Any

from promptgen.evaluation.checks import CheckResult, Contains, IsJson
from promptgen.formats.detect import is_json_document

LANGUAGE_CHARS = 100  # Promptarchitect detects the language of the first 100 characters
_SPLITTERS: dict[str, Callable[[str], list[str]]] = {
    "words": str.split,
    "sentences": lambda text: re.split(r"[.!?]", text),
    "lines": lambda text: text.split("\n"),
    "paragraphs": lambda text: text.split("\n\n"),
    "characters": list,
}


def count(unit: str, text: str) -> int:
    """`unit`s in `text`, counted as Promptarchitect counts them."""
    items = _SPLITTERS[unit](text)
    if unit != "characters":
        items = [item for item in items if item.strip()]
    return len(items)


def property_check(spec: dict[str, Any], output: str) -> CheckResult:
    unit, low, high, equals = spec["unit"], spec["min"], spec["max"], spec["equals"]
    n = count(unit, output)
    if equals is not None:
        passed, wanted = n == equals, f"exactly {equals}"
    else:
        passed = (low is None or n >= low) and (high is None or n <= high)
        if low is not None and high is not None:
            wanted = f"{low} to {high}"
        else:
            wanted = f"at least {low}" if low is not None else f"at most {high}"
    return CheckResult(passed, f"{n} {unit}, expected {wanted}", score=float(n))


class _Elements(HTMLParser):
    """The start tags of a document, read by the standard library's lenient parser."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        self.tags.append(tag)

    def handle_startendtag(self, tag: str, attrs: Any) -> None:
        self.tags.append(tag)


def html_elements(text: str) -> list[str]:
    parser = _Elements()
    try:
        parser.feed(text)
        parser.close()
    except (AssertionError, ValueError):  # markup the parser gives up on: not HTML
        return []
    return parser.tags


def html_problem(output: str) -> str | None:
    """Why the output is not an HTML document (None: it is one)."""
    text = output.lstrip()
    if not text.startswith("<"):
        return "does not start with '<'"
    if not html_elements(text):
        return "holds no HTML element"
    return None


# The Markdown constructs that make an output Markdown rather than plain text.
MARKDOWN = {
    "heading": re.compile(r"^ {0,3}#{1,6}[ \t]+\S|^[^\n]*\S[^\n]*\n {0,3}(=+|-+)[ \t]*$", re.M),
    "list": re.compile(r"^ {0,3}(?:[-*+]|\d{1,9}[.)])[ \t]+\S", re.M),
    "emphasis": re.compile(
        r"\*\*[^*\n]+\*\*|__[^_\n]+__|(?<![\w*])\*[^*\s](?:[^*\n]*[^*\s])?\*(?![\w*])"
        r"|(?<![\w_])_[^_\s](?:[^_\n]*[^_\s])?_(?![\w_])"
    ),
    "code": re.compile(r"^ {0,3}(?:```|~~~)|`[^`\n]+`", re.M),
    "link": re.compile(r"!?\[[^\]\n]+\]\([^)\s]+(?:[ \t]+\"[^\"\n]*\")?\)"),
    "table": re.compile(
        r"^[^\n]*\|[^\n]*\n[ \t]*(?:\|[ \t]*:?-{3,}:?[ \t]*)+\|?[ \t]*$"
        r"|^[^\n]*\|[^\n]*\n[ \t]*:?-{3,}:?[ \t]*(?:\|[ \t]*:?-{3,}:?[ \t]*)+\|?[ \t]*$",
        re.M,
    ),
    "blockquote": re.compile(r"^ {0,3}>", re.M),
    "rule": re.compile(r"^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$", re.M),
}


def markdown_constructs(text: str) -> list[str]:
    return [name for name, pattern in MARKDOWN.items() if pattern.search(text)]


def _markup_problem(output: str) -> str | None:
    """Why the output is not free text of some kind: empty, JSON, or HTML."""
    if not output.strip():
        return "the output is empty"
    if is_json_document(output):
        return "the output is JSON"
    if html_problem(output) is None:
        return "the output is an HTML document"
    return None


def format_check(fmt: str, output: str) -> CheckResult:
    if fmt == "json":
        result = IsJson().evaluate(output)
        return CheckResult(result.passed, result.reason)
    if fmt == "html":
        problem = html_problem(output)
        return CheckResult(problem is None, problem or "an HTML document")
    found = markdown_constructs(output)
    problem = _markup_problem(output)
    if fmt == "markdown":
        if problem is None and not found:
            problem = "no Markdown construct (" + ", ".join(MARKDOWN) + ")"
        return CheckResult(problem is None, problem or f"Markdown: {', '.join(found)}")
    if problem is None and found:
        problem = f"the output has Markdown ({', '.join(found)})"
    return CheckResult(problem is None, problem or "plain text")


def language_check(code: str, output: str) -> CheckResult:
    """langdetect on the first 100 characters, seeded; passes when `code` is part of the
    detected code (`zh` passes for `zh-cn`), as Promptarchitect decides."""
    from langdetect import DetectorFactory, LangDetectException, detect

    DetectorFactory.seed = 0  # the same answer for the same text, every time
    try:
        found = detect(output[:LANGUAGE_CHARS])
    except LangDetectException:
        return CheckResult(False, "no language could be detected")
    return CheckResult(code in found, f"detected {found}, expected {code}")


def keyword_check(keyword: str, output: str) -> CheckResult:
    return Contains(keyword).evaluate(output)


def run_check(spec: dict[str, Any], output: str) -> CheckResult:
    """The result of one deterministic Promptarchitect test on `output`."""
    kind = spec["type"]
    if kind == "property":
        return property_check(spec, output)
    if kind == "format":
        return format_check(spec["format"], output)
    if kind == "language":
        return language_check(spec["lang_code"], output)
    return keyword_check(spec["keyword"], output)
