"""A small Mustache renderer that is safe on untrusted templates and data.

Why not chevron or pystache: both fall back to `getattr` on non-dict values (and
pystache calls what it finds), and both HTML-escape `{{x}}`, which corrupts prompts.
Here a name only ever looks up dict keys and list indexes, and nothing is escaped.
Supported: variables, `{{{x}}}`/`{{&x}}`, sections, inverted sections, comments,
dotted names, `{{.}}`, standalone-line trimming. Partials and delimiter changes are
rejected with a clear error. Rendering is bounded like Jinja's (promptgen.bounds):
sections nest at most MAX_TEMPLATE_NESTING deep, a render has a budget of steps and
seconds (sections over long lists inside each other), and the output has a maximum
length, checked before each value's text is built.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from promptgen.bounds import (
    MAX_TEMPLATE_CHARS,
    MAX_TEMPLATE_NESTING,
    MAX_TEMPLATE_TAGS,
    Budget,
    measure,
    printable,
)

_TAG = re.compile(r"\{\{(\{)?\s*([#^/!&>=]?)\s*(.*?)\s*(\})?\}\}", re.S)
_MISSING = object()


class MustacheError(ValueError):
    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line


class MustacheSecurityError(MustacheError):
    pass


class MustacheMissing(MustacheError):
    def __init__(self, name: str, line: int | None = None) -> None:
        super().__init__(f"'{name}' is undefined", line)
        self.name = name


@dataclass
class _Node:
    kind: str  # text, var, section, inverted
    value: str
    line: int
    children: list[_Node] = field(default_factory=list)


_NAME = re.compile(r"^[\w.-]+$")


def _check_name(name: str, line: int) -> None:
    if name == ".":
        return
    if not _NAME.match(name):
        raise MustacheError(
            f"'{printable(name)}' is not a mustache name (letters, digits, _ . -)", line
        )
    for part in name.split("."):
        if not part or part.startswith("_"):
            raise MustacheSecurityError(
                f"'{printable(name)}' reaches for a private or internal name; "
                "templates may only use data",
                line,
            )


def _standalone_span(text: str, start: int, end: int) -> tuple[int, int] | None:
    """If the tag at text[start:end] stands alone on its line, the span of that line."""
    line_start = text.rfind("\n", 0, start) + 1
    nl = text.find("\n", end)
    line_end = len(text) if nl == -1 else nl + 1
    before, after = text[line_start:start], text[end : line_end if nl == -1 else nl]
    if before.strip() or after.strip().rstrip("\r"):
        return None
    return line_start, line_end


def parse(template: str) -> list[_Node]:
    root: list[_Node] = []
    stack: list[_Node] = []
    out = root
    pos = 0
    tags = template.count("{{")
    if tags > MAX_TEMPLATE_TAGS:
        raise MustacheSecurityError(
            f"the template has {tags:,} tags; promptgen reads at most {MAX_TEMPLATE_TAGS:,} "
            "in one message"
        )
    line, counted = 1, 0  # lines are counted as the tags go (never from the start again)
    for match in _TAG.finditer(template):
        if match.start() < pos:
            continue
        triple, sigil, name = match.group(1), match.group(2), match.group(3)
        line += template.count("\n", counted, match.start())
        counted = match.start()
        start, end = match.start(), match.end()
        if sigil in "#^/!" and sigil:
            span = _standalone_span(template, start, end)
            if span:
                start, end = span
        if start > pos:
            out.append(_Node("text", template[pos:start], line))
        pos = end
        if sigil == "!":
            continue
        if sigil in (">", "="):
            what = "partials" if sigil == ">" else "delimiter changes"
            raise MustacheError(f"mustache {what} are not supported", line)
        if triple and not match.group(4):
            raise MustacheError("unclosed '{{{' tag", line)
        _check_name(name, line)
        if sigil in ("#", "^"):
            if len(stack) >= MAX_TEMPLATE_NESTING:
                raise MustacheSecurityError(
                    f"sections nested more than {MAX_TEMPLATE_NESTING} deep", line
                )
            node = _Node("section" if sigil == "#" else "inverted", name, line)
            out.append(node)
            stack.append(node)
            out = node.children
        elif sigil == "/":
            if not stack or stack[-1].value != name:
                raise MustacheError(f"unexpected closing tag '{{{{/{printable(name)}}}}}'", line)
            stack.pop()
            out = stack[-1].children if stack else root
        else:
            out.append(_Node("var", name, line))
    if stack:
        raise MustacheError(
            f"section '{printable(stack[-1].value)}' is never closed", stack[-1].line
        )
    if pos < len(template):
        out.append(_Node("text", template[pos:], line + template.count("\n", counted, pos)))
    return root


def _lookup(stack: list[Any], name: str) -> Any:
    if name == ".":
        return stack[-1]
    first, *rest = name.split(".")
    for scope in reversed(stack):
        value = _get(scope, first)
        if value is not _MISSING:
            for part in rest:
                value = _get(value, part)
                if value is _MISSING:
                    return _MISSING
            return value
    return _MISSING


def _get(scope: Any, key: str) -> Any:
    if isinstance(scope, Mapping):
        return scope.get(key, _MISSING)
    if isinstance(scope, Sequence) and not isinstance(scope, str) and key.isdigit():
        index = int(key)
        return scope[index] if index < len(scope) else _MISSING
    return _MISSING


def _to_text(value: Any) -> str:
    if value is None:
        return ""
    if value is True or value is False:
        return "true" if value else "false"
    return str(value)


class _Renderer:
    """One render: the output so far, its length, and the render's budget."""

    def __init__(self, strict: bool) -> None:
        self.strict = strict
        self.out: list[str] = []
        self.size = 0
        self.budget = Budget()

    def emit(self, value: Any) -> None:
        if not isinstance(value, str):
            self.budget.build(measure(value, MAX_TEMPLATE_CHARS - self.size), "the text of a value")
            value = _to_text(value)
        self.size += len(value)
        if self.size > MAX_TEMPLATE_CHARS:
            raise MustacheSecurityError(
                f"the template renders more than {MAX_TEMPLATE_CHARS:,} characters"
            )
        self.out.append(value)

    def render(self, nodes: list[_Node], stack: list[Any]) -> None:
        for node in nodes:
            self.budget.step()
            if node.kind == "text":
                self.emit(node.value)
                continue
            value = _lookup(stack, node.value)
            if node.kind == "var":
                if value is _MISSING:
                    if self.strict:
                        raise MustacheMissing(node.value, node.line)
                    continue
                self.emit(value)
                continue
            falsy = value is _MISSING or not value
            if node.kind == "inverted":
                if falsy:
                    self.render(node.children, stack)
            elif not falsy:
                is_list = isinstance(value, Sequence) and not isinstance(value, str)
                for item in value if is_list else [value]:
                    self.render(node.children, [*stack, item])


def render(template: str, data: Mapping[str, Any], *, strict: bool = True) -> str:
    renderer = _Renderer(strict)
    renderer.render(parse(template), [data])
    return "".join(renderer.out)


def variables(template: str) -> list[str]:
    """Top-level names the template reads (names inside sections may come from items)."""
    names: list[str] = []
    for node in parse(template):
        if node.kind != "text" and node.value != ".":
            first = node.value.split(".")[0]
            if first not in names:
                names.append(first)
    return names
