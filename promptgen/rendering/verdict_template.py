"""Verdict-style templates (haizelabs/verdict `Prompt`): `@system` / `@user` sections and
`{expression}` placeholders, read the way Verdict reads them but never through `eval`.

Sections: `@system`, `@user` and `@no_format` open a section; text before the first one
is the user message when no `@user` is given (and dropped, with a warning, when one is).
Only the system and the user message exist. Unless `@no_format` appears anywhere, each
section loses its leading and trailing blank lines and every line is `lstrip()`-ed.
Verdict lets *any* `@word` open (and silently drop) a section, so `bob@example.com`
truncates a prompt there; here only the three section names do, and never right after a
letter or digit, so an e-mail address or `@mention` stays text.

Placeholders: every `{...}` not next to another brace is one Python expression over
`source` and `input` (the input values, as records: `{source.reply}`), `previous` (the
outputs of earlier steps) and `unit` (the step itself), evaluated by
promptgen.rendering.restricted. A placeholder ends at the brace that closes it as Python
reads it (strings and f-strings tokenized), so `{"\n".join(f"{i+1}. {x}" for ...)}` is
one expression; braces that do not make one expression fall back to Verdict's own rule
(the nearest `}`). `{{` and `}}` are not escapes: Verdict only warns about them and sends
them as written, and so does promptgen. Every placeholder is replaced in one pass
(Verdict's successive `str.replace` could also rewrite text that an earlier value
brought in).
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from promptgen.errors import RenderError, TemplateSecurityError
from promptgen.rendering.pyformat import MissingInput
from promptgen.rendering.restricted import (
    FUNCTIONS,
    MAX_SOURCE_CHARS,
    ExpressionFailed,
    ExpressionRefused,
    Record,
    attribute_paths,
    evaluate,
    names_used,
    parse,
)

ROLES = ("system", "user")
NAMES = ("source", "input", "previous", "unit")
INPUT_NAMES = ("source", "input")
_BUILTINS = {*FUNCTIONS, "re", "True", "False", "None"}
_SECTION = re.compile(r"(?<![\w@])@(system|user|no_format)\b")
_SIMPLE = re.compile(r"\{([^{}]+?)\}(?!\})")  # Verdict's rule, after an unbraced `{`
_OPEN, _CLOSE = "([{", ")]}"
_SHOWN = 80


@dataclass(frozen=True)
class Section:
    role: str
    content: str
    line: int  # 1-based line of the text where the content starts


@dataclass(frozen=True)
class Template:
    """A template split into its messages (system first), as Verdict sends them."""

    sections: list[Section]
    no_format: bool
    warnings: list[str] = field(default_factory=list)


def strip(text: str) -> tuple[str, int]:
    """Verdict's normalisation: blank lines at both ends dropped, every line lstrip()-ed;
    also how many lines were dropped at the start."""
    lines = text.splitlines()
    start = 0
    while start < len(lines) and not lines[start].strip():
        start += 1
    end = len(lines)
    while end > start and not lines[end - 1].strip():
        end -= 1
    return "\n".join(line.lstrip() for line in lines[start:end]), start


def _line_at(text: str, offset: int, first_line: int) -> int:
    return first_line + text.count("\n", 0, offset)


def _end(text: str) -> int:
    """Where the last section ends: Verdict's `$` also matches before a final newline."""
    return len(text) - 1 if text.endswith("\n") else len(text)


def parse_template(text: str, first_line: int = 1) -> Template:
    """The sections of `text` (whose first line is line `first_line` of its file)."""
    markers = list(_SECTION.finditer(text))
    found: dict[str, tuple[str, int]] = {}
    warnings: list[str] = []
    for i, match in enumerate(markers):
        end = markers[i + 1].start() if i + 1 < len(markers) else _end(text)
        role, line = match.group(1), _line_at(text, match.start(), first_line)
        if role in found and role != "no_format":
            warnings.append(f"line {line}: a second @{role} section replaces the first one")
        found[role] = (text[match.end() : end], line)
    no_format = "no_format" in found
    leading = text[: markers[0].start()] if markers else text
    if leading.strip():
        if "user" in found:
            warnings.append(
                f"line {first_line}: the text before the first section is dropped because an "
                "@user section is given (as Verdict does)"
            )
        else:
            found["user"] = (leading, first_line)
    if "user" not in found:
        raise RenderError(
            "the template has no @user section and no text before its first section",
            line=first_line,
            hint="write the user message after an @user line",
        )
    sections = []
    for role in ROLES:
        if role not in found:
            continue
        content, line = found[role]
        if not no_format:
            content, skipped = strip(content)
            line += skipped
        sections.append(Section(role, content, line))
    return Template(sections, no_format, warnings)


def sections(text: str) -> list[tuple[str, str]]:
    """`[(role, content), ...]`: the system message (if any), then the user message."""
    return [(s.role, s.content) for s in parse_template(text).sections]


@dataclass(frozen=True)
class Placeholder:
    start: int  # offset of the opening brace
    end: int  # offset after the closing brace
    expr: str  # the text between them


def _closing(source: str, start: int) -> tuple[int | None, int]:
    """Where the Python expression in the brace at `start` closes (the offset after its
    `}`), read with `tokenize` so strings and f-strings keep their own braces; None when
    the braces do not balance within MAX_SOURCE_CHARS. Also how many characters it read."""
    chunk = source[start : start + MAX_SOURCE_CHARS + 2]
    starts = [0]
    for line in chunk.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    stack: list[str] = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(chunk).readline):
            if token.type in (tokenize.ERRORTOKEN, tokenize.ENDMARKER):
                break
            if token.type != tokenize.OP:
                continue
            if token.string in _OPEN:
                stack.append(_CLOSE[_OPEN.index(token.string)])
            elif token.string in _CLOSE:
                if not stack or stack.pop() != token.string:
                    break
                if not stack:
                    row, col = token.end
                    return start + starts[row - 1] + col, starts[row - 1] + col
    except (tokenize.TokenError, SyntaxError):
        pass
    return None, len(chunk)


def _expression(text: str) -> bool:
    try:
        ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def placeholders(source: str) -> list[Placeholder]:
    """Every placeholder, in order: a `{` not next to another brace opens one, which ends
    where the Python expression closes; where the braces make no expression (or the
    scan's budget is spent), Verdict's rule decides: the nearest `}` not followed by
    another, with no brace between."""
    found: list[Placeholder] = []
    budget = 4 * len(source) + MAX_SOURCE_CHARS  # what tokenizing may read in all
    pos = source.find("{")
    while pos >= 0:
        if (pos and source[pos - 1] == "{") or source.startswith("{", pos + 1):
            pos = source.find("{", pos + 1)
            continue
        simple = _SIMPLE.match(source, pos)
        end: int | None = None
        if simple is None or any(q in simple.group(1) for q in "'\""):
            if budget > 0:
                end, read = _closing(source, pos)
                budget -= read
            if end is not None and (
                source.startswith("}", end) or not _expression(source[pos + 1 : end - 1])
            ):
                end = None
        if end is None and simple is not None:
            end = simple.end()
        if end is None:
            pos = source.find("{", pos + 1)
            continue
        found.append(Placeholder(pos, end, source[pos + 1 : end - 1]))
        pos = source.find("{", end)
    return found


def _shown(expr: str) -> str:
    text = " ".join(expr.split())
    return "{" + (text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…") + "}"


def _line(source: str, match: Placeholder) -> int:
    return source.count("\n", 0, match.start) + 1


def _refused(expr: str, err: ExpressionRefused, line: int) -> RenderError:
    """A refused placeholder: a security error, unless it is plain wrong (bad syntax, an
    unknown name or attribute), which is an ordinary template error."""
    reason = err.message
    if reason.startswith(("not a Python expression", "name ", "attribute ")):
        return RenderError(
            f"placeholder {_shown(expr)}: {reason.split(': ')[0]}",
            line=line,
            hint="Verdict evaluates every {...} as a Python expression over source, input, "
            "previous and unit; there is no escape for literal braces",
        )
    return TemplateSecurityError(f"placeholder {_shown(expr)} refused: {reason}", line=line)


def _check_one(expr: str, line: int) -> list[str]:
    """The free names `expr` reads; refuses what no input can make safe."""
    try:
        tree = parse(expr)
        names = names_used(expr)
    except ExpressionRefused as err:
        raise _refused(expr, err, line) from None
    for node in ast.walk(tree):
        private = (isinstance(node, ast.Attribute) and node.attr.startswith("_")) or (
            isinstance(node, ast.Name) and node.id.startswith("_")
        )
        if private:
            raise TemplateSecurityError(
                f"placeholder {_shown(expr)} refused: names starting with _ are not allowed",
                line=line,
            )
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            continue
        if node.func.id not in _BUILTINS and node.func.id not in NAMES:
            raise TemplateSecurityError(
                f"placeholder {_shown(expr)} refused: function {node.func.id!r} is not allowed",
                line=line,
            )
    unknown = [n for n in names if n not in NAMES and n not in _BUILTINS]
    if unknown:
        raise RenderError(
            f"placeholder {_shown(expr)}: name {unknown[0]!r} is not defined",
            line=line,
            hint=f"a Verdict template reads {', '.join(NAMES)}; write {{source.{unknown[0]}}} "
            "for an input",
        )
    if not any(n in NAMES for n in names):  # a constant: its bounds are checked now
        _evaluate(expr, {}, line)
    return names


def check(source: str) -> None:
    """Raise RenderError (TemplateSecurityError when refused) for a bad placeholder."""
    for match in placeholders(source):
        _check_one(match.expr, _line(source, match))


def _subscript_keys(expr: str, root: str) -> list[str]:
    keys = []
    for node in ast.walk(parse(expr)):
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Name)
            and node.value.id == root
            and isinstance(node.slice, ast.Constant)
            and isinstance(node.slice.value, str)
        ):
            keys.append(node.slice.value)
    return keys


def _input_names(expr: str) -> list[str]:
    found: list[str] = []
    for root in INPUT_NAMES:
        for name in [*attribute_paths(expr, root), *_subscript_keys(expr, root)]:
            if name not in found:
                found.append(name)
    return found


def variables(source: str) -> list[str]:
    """The input names the template reads (`{source.reply}`, `{input["reply"]}` give
    "reply"), in order of first use."""
    found: list[str] = []
    for match in placeholders(source):
        _check_one(match.expr, _line(source, match))
        for name in _input_names(match.expr):
            if name not in found:
                found.append(name)
    return found


def roots(source: str) -> list[str]:
    """Which of source, input, previous and unit the placeholders read."""
    found: list[str] = []
    for match in placeholders(source):
        for name in _check_one(match.expr, _line(source, match)):
            if name in NAMES and name not in found:
                found.append(name)
    return found


def to_record(value: Any) -> Any:
    """Mappings (also inside lists) as records, so `{previous.judge.score}` reads."""
    if isinstance(value, Record):
        return value
    if isinstance(value, Mapping):
        return Record({str(k): to_record(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return [to_record(v) for v in value]
    return value


def _plain(value: Any) -> Any:
    if isinstance(value, Record):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def previous_of(steps: Sequence[tuple[str, Mapping[str, Any]]]) -> Record:
    """`previous` over the outputs of earlier steps, as Verdict's `Previous` resolves it:
    with one step its fields read directly (`{previous.rubric}`); a step name gives that
    step's output (`{previous.judge.score}`), or the list of outputs of every step of
    that name (`{previous.judge[2].score}`). A field of the only step wins over a name."""
    by_name: dict[str, list[Any]] = {}
    for name, output in steps:
        by_name.setdefault(name, []).append(to_record(output))
    data: dict[str, Any] = {n: outs[0] if len(outs) == 1 else outs for n, outs in by_name.items()}
    if len(steps) == 1:
        data.update(to_record(steps[0][1]))
    return Record(data)


def _evaluate(expr: str, names: Mapping[str, Any], line: int) -> Any:
    try:
        return evaluate(expr, names)
    except ExpressionRefused as err:
        raise _refused(expr, err, line) from None
    except ExpressionFailed as err:
        raise RenderError(f"placeholder {_shown(expr)} failed: {err}", line=line) from None


def _missing(expr: str, used: list[str], names: Mapping[str, Any]) -> str | None:
    """The first input or step `expr` needs that is not there."""
    for root in INPUT_NAMES:
        if root in used:
            for name in attribute_paths(expr, root) + _subscript_keys(expr, root):
                if name not in names[root]:
                    return name
    return next((n for n in ("previous", "unit") if n in used and names[n] is None), None)


def render(
    source: str,
    values: Mapping[str, Any],
    strict: bool = True,
    *,
    previous: Mapping[str, Any] | None = None,
    unit: Mapping[str, Any] | None = None,
) -> str:
    """`source` with every placeholder replaced by `str()` of its value. `values` are the
    input values (`source` and `input`); `previous` and `unit` are what a metric's step
    passes. A missing input raises MissingInput when `strict`, else stays as written."""
    inputs = to_record(dict(values))
    names = {
        "source": inputs,
        "input": inputs,
        "previous": None if previous is None else to_record(previous),
        "unit": None if unit is None else to_record(unit),
    }

    def value(match: Placeholder) -> str:
        expr, line = match.expr, _line(source, match)
        used = _check_one(expr, line)
        missing = _missing(expr, used, names)
        if missing is not None:
            if strict:
                raise MissingInput(missing, line)
            return source[match.start : match.end]
        return str(_plain(_evaluate(expr, names, line)))

    parts, done = [], 0
    for match in placeholders(source):
        parts += [source[done : match.start], value(match)]
        done = match.end
    return "".join([*parts, source[done:]])
