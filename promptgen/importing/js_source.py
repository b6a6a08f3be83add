"""Prompts in JavaScript/TypeScript source, read with a small tokenizer (never run):
'...' and "..." strings, template literals with `${expr}`, `+` concatenation, and
messages arrays of `{role, content}` objects.

A message's content may be a name: bound in the file to a string, it is that string;
bound to nothing (a parameter), it is an input. Anything else stops the import.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from promptgen.errors import BadInputError
from promptgen.importing.found import TEXT_KEYWORDS, Candidate, Found, choose
from promptgen.importing.pieces import (
    Imported,
    Msg,
    Piece,
    Var,
    format_pieces,
    merge_text,
    role_of,
    var_name,
)

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "v": "\v", "0": "\0"}
_IDENT = re.compile(r"[A-Za-z_$][\w$]*")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


@dataclass
class Tok:
    kind: str  # str, ident, num, punct
    value: Any
    line: int


@dataclass(frozen=True)
class Ref:
    """A value that is just a name (`content: SYSTEM`)."""

    name: str
    line: int


@dataclass(frozen=True)
class Unread:
    """A value this parser does not read (a call, `await ...`, `...history`)."""

    text: str
    line: int


_HINT = "write it as a string literal, a template literal, or a name bound to one in this file"


def tokenize(text: str, file: str) -> list[Tok]:
    toks: list[Tok] = []
    i, line = 0, 1
    while i < len(text):
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif c.isspace():
            i += 1
        elif text.startswith("//", i):
            i = text.find("\n", i) if "\n" in text[i:] else len(text)
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = len(text) if end < 0 else end + 2
            line += text.count("\n", i, end)
            i = end
        elif c in "'\"`":
            pieces, end = _string(text, i, file, line)
            toks.append(Tok("str", pieces, line))
            line += text.count("\n", i, end)
            i = end
        elif (m := _NUMBER.match(text, i)) and (c.isdigit() or c == "-"):
            toks.append(Tok("num", float(m.group()) if "." in m.group() else int(m.group()), line))
            i = m.end()
        elif m := _IDENT.match(text, i):
            toks.append(Tok("ident", m.group(), line))
            i = m.end()
        else:
            toks.append(Tok("punct", c, line))
            i += 1
    return toks


def _string(text: str, start: int, file: str, line: int) -> tuple[list[Piece], int]:
    quote, i = text[start], start + 1
    out: list[Piece] = []
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "u" and re.match(r"[0-9a-fA-F]{4}", text[i + 2 : i + 6]):
                out.append(chr(int(text[i + 2 : i + 6], 16)))
                i += 6
                continue
            out.append(_ESCAPES.get(nxt, "" if nxt == "\n" else nxt))
            i += 2
        elif c == quote:
            return merge_text(out), i + 1
        elif quote == "`" and text.startswith("${", i):
            end = _expression_end(text, i + 2, file, line)
            out.append(Var(var_name(text[i + 2 : end])))
            i = end + 1
        elif c == "\n" and quote != "`":
            break
        else:
            out.append(c)
            i += 1
    raise BadInputError("a string is not closed", file=file, line=line, hint="or pass --kind text")


def _expression_end(text: str, i: int, file: str, line: int) -> int:
    depth = 0
    while i < len(text):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            if depth == 0:
                return i
            depth -= 1
        i += 1
    raise BadInputError("a ${...} is not closed", file=file, line=line)


class _Parser:
    """Values after `name =` or `key:`: strings joined with `+`, names (as variables),
    numbers, booleans, arrays and objects. Anything else is skipped."""

    def __init__(self, toks: list[Tok]) -> None:
        self.toks, self.i = toks, 0

    def peek(self, offset: int = 0) -> Tok | None:
        j = self.i + offset
        return self.toks[j] if j < len(self.toks) else None

    def is_punct(self, char: str, offset: int = 0) -> bool:
        tok = self.peek(offset)
        return tok is not None and tok.kind == "punct" and tok.value == char

    def value(self) -> Any:
        tok = self.peek()
        if tok is None:
            return None
        if self.is_punct("["):
            return self.array()
        if self.is_punct("{"):
            return self.object()
        if tok.kind == "num" or (tok.kind == "ident" and tok.value in ("true", "false")):
            self.i += 1
            return tok.value if tok.kind == "num" else tok.value == "true"
        start = self.i
        value = self.concat()
        return Unread(self.text(start), tok.line) if value is None else value

    def concat(self) -> list[Piece] | Ref | None:
        parts: list[Piece] = []
        strings = 0
        while True:
            tok = self.peek()
            if tok is None:
                return None
            if tok.kind == "str":
                parts += tok.value
                strings += 1
            elif tok.kind == "ident":
                name = self.dotted()
                if not strings and not self.is_punct("+", 1) and self.ends(tok.line, 1):
                    self.i += 1
                    return Ref(name, tok.line)  # a name alone
                parts.append(Var(var_name(name)))
            else:
                return None
            self.i += 1
            if not self.is_punct("+"):
                return merge_text(parts) if strings else None
            self.i += 1

    def ends(self, line: int, offset: int = 0) -> bool:
        """Whether the value ends before the token at `offset`: `,` `;` a closing bracket,
        or the next line."""
        tok = self.peek(offset)
        return tok is None or tok.line > line or (tok.kind == "punct" and tok.value in ",;)]}")

    def text(self, start: int) -> str:
        """The source of the value from token `start`, for a message (no position moves)."""
        out, depth, j = "", 0, start
        while j < len(self.toks):
            tok = self.toks[j]
            if tok.kind == "punct" and tok.value in "([{":
                depth += 1
            elif tok.kind == "punct" and tok.value in ")]}":
                if depth == 0:
                    break
                depth -= 1
            elif (
                depth == 0
                and j > start
                and (tok.value in (",", ";") or tok.line > self.toks[j - 1].line)
            ):
                break
            if tok.kind == "str" and not any(isinstance(p, Var) for p in tok.value):
                piece = json.dumps("".join(tok.value), ensure_ascii=False)
            elif tok.kind == "str":
                piece = (
                    "`"
                    + "".join(p if isinstance(p, str) else "${" + p.name + "}" for p in tok.value)
                    + "`"
                )
            else:
                piece = str(tok.value)
            word = tok.kind in ("ident", "num", "str")
            if out and word and (self.toks[j - 1].kind != "punct" or out.endswith(",")):
                out += " "
            out += piece
            j += 1
            if len(out) > 60:
                return out[:57] + "..."
        return out

    def dotted(self) -> str:
        names = [self.toks[self.i].value]
        while self.is_punct(".", 1) and (nxt := self.peek(2)) and nxt.kind == "ident":
            self.i += 2
            names.append(self.toks[self.i].value)
        return ".".join(names)

    def array(self) -> list[Any]:
        self.i += 1
        items: list[Any] = []
        skipping = False  # the rest of an item this parser does not read
        while self.peek() is not None and not self.is_punct("]"):
            item = self.value()
            if not skipping:
                items.append(item)
            if self.is_punct(","):
                self.i += 1
                skipping = False
            elif not self.is_punct("]"):
                self.i += 1  # something this parser does not read
                skipping = True
        self.i += 1
        return items

    def object(self) -> dict[str, Any]:
        self.i += 1
        out: dict[str, Any] = {}
        while self.peek() is not None and not self.is_punct("}"):
            key = self.peek()
            if key is not None and key.kind in ("ident", "str") and self.is_punct(":", 1):
                name = key.value if key.kind == "ident" else "".join(map(str, key.value))
                self.i += 2
                out[name] = (self.value(), key.line)
            else:
                self.i += 1
            if self.is_punct(","):
                self.i += 1
        self.i += 1
        return out


def read_javascript(text: str, file: str) -> Imported:
    toks = tokenize(text, file)
    parser = _Parser(toks)
    found = Found()
    bindings: dict[str, list[Any]] = _declared(toks)
    values: list[tuple[str | None, Any, int]] = []
    while parser.i < len(toks):
        tok = toks[parser.i]
        typed = _typed(parser) if tok.kind == "ident" else 0
        if typed or (tok.kind == "ident" and _assigns(parser)):
            parser.i = (typed or parser.i + 1) + 1
            value = parser.value()
            bindings.setdefault(tok.value, []).append(value)
            values.append((tok.value, value, tok.line))
        elif (parser.is_punct("{") or parser.is_punct("[")) and _argument(toks, parser.i):
            values.append((None, parser.value(), tok.line))
        else:
            parser.i += 1
    source = _Source(file, bindings)
    for name, value, line in values:
        _record(found, source, name, value, line)
    return choose(found, "javascript", file)


@dataclass
class _Source:
    file: str
    bindings: dict[str, list[Any]]  # name -> each value it is given (None: not a plain one)


def _assigns(parser: _Parser) -> bool:
    """`name = ...`, not `==` nor `=>`."""
    return parser.is_punct("=", 1) and not parser.is_punct("=", 2) and not parser.is_punct(">", 2)


def _typed(parser: _Parser) -> int:
    """For `const NAME: Type = value` (TypeScript), the index of its `=`; else 0."""
    i = parser.i
    before = parser.toks[i - 1] if i else None
    if not (before and before.kind == "ident" and before.value in ("const", "let", "var")):
        return 0
    if not parser.is_punct(":", 1):
        return 0
    depth, j = 0, i + 2
    while j < len(parser.toks):
        tok = parser.toks[j]
        if tok.kind == "punct" and tok.value in "([{<":
            depth += 1
        elif tok.kind == "punct" and tok.value in ")]}>":
            depth -= 1
        elif tok.kind == "punct" and tok.value == ";" and depth <= 0:
            return 0
        elif tok.kind == "punct" and tok.value == "=" and depth <= 0:
            return j
        j += 1
    return 0


def _declared(toks: list[Tok]) -> dict[str, list[Any]]:
    """Names bound by an import or a function or class declaration (not to a string)."""
    names: list[str] = []
    importing = False  # between `import` and `from` (or the module's string)
    for i, tok in enumerate(toks):
        after = toks[i + 1] if i + 1 < len(toks) else None
        if tok.kind != "ident" or tok.value == "from":
            importing = importing and tok.kind != "str" and tok.value != "from"
        elif tok.value == "import":
            importing = True
        elif (
            importing and tok.value not in ("type", "as") and (after is None or after.value != "as")
        ):
            names.append(tok.value)  # `import X`, `{ A, B as C }`, `* as D`: X, A, C, D
        elif tok.value in ("function", "class") and after is not None and after.kind == "ident":
            names.append(after.value)
    return {name: [None] for name in names}


def _argument(toks: list[Tok], i: int) -> bool:
    """An object or array passed to a call (`create({...})`), not a block of code."""
    before = toks[i - 1] if i else None
    return before is not None and before.kind == "punct" and before.value in "(,"


def _record(found: Found, source: _Source, name: str | None, value: Any, line: int) -> None:
    if isinstance(value, dict):
        for key, (inner, at) in value.items():
            _record(found, source, key, inner, at)
    elif isinstance(value, list) and any(isinstance(v, dict) and "role" in v for v in value):
        found.message_lists.append(_messages(source, value, line))
    elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        return
    elif isinstance(value, list) and all(isinstance(p, str | Var) for p in value):
        plain = "".join(p for p in value if isinstance(p, str)) if len(value) == 1 else None
        if name and plain is not None and name not in TEXT_KEYWORDS:
            found.keyword(name, plain)  # `model: "gpt-4o"`, `const topic = "tides"`
            if name in ("model", "role"):
                return
        if plain is not None:
            value = format_pieces(plain)  # LangChain.js templates: `{name}`
        found.strings.append(Candidate(name, value, line))
    elif name and isinstance(value, int | float | bool):
        found.keyword(name, value)


def _pieces(value: Any) -> list[Piece] | None:
    if isinstance(value, list) and all(isinstance(p, str | Var) for p in value):
        return value
    return None


def _shown(value: Any) -> str:
    return value.text if isinstance(value, Unread) else getattr(value, "name", "?")


def _unread(source: _Source, line: int, what: str) -> BadInputError:
    return BadInputError(f"cannot read {what}", file=source.file, line=line, hint=_HINT)


def _messages(source: _Source, items: list[Any], line: int) -> list[Msg]:
    """A messages array, read whole: every item's role, content and place, or an error
    naming the line."""
    out = []
    for item in items:
        if not isinstance(item, dict):
            at = item.line if isinstance(item, Unread | Ref) else line
            raise _unread(source, at, f"`{_shown(item)}` in a messages list")
        role, role_line = item.get("role", (None, line))
        pieces = _pieces(role) or []
        text_role = "".join(p for p in pieces if isinstance(p, str))
        if role is None:
            raise _unread(source, role_line, "a message: it has no `role: ...`")
        if not pieces or _vars(pieces):
            raise _unread(source, role_line, f"the role `{_shown(role)}` of a message")
        mapped = role_of(text_role)
        if mapped is None:
            raise BadInputError(
                f"a message's role {text_role!r} is not one promptgen knows",
                file=source.file,
                line=role_line,
                hint="use system, developer, user or assistant",
            )
        if "content" not in item:
            raise _unread(source, role_line, f"the {mapped} message: it has no `content: ...`")
        content, at = item["content"]
        out.append(Msg(mapped, _content(source, content, mapped, at, set())))
    return out


def _vars(pieces: list[Piece]) -> bool:  # any variable
    return any(isinstance(p, Var) for p in pieces)


def _content(source: _Source, value: Any, role: str, line: int, seen: set[str]) -> list[Piece]:
    """A message's content: a string, a template literal, `+` of them; a name bound to
    one in this file, or an input where the file does not bind it (a parameter)."""
    pieces = _pieces(value)
    if pieces is not None:
        return pieces
    if not isinstance(value, Ref) or "." in value.name:
        raise _unread(source, line, f"the {role} message's content `{_shown(value)}`")
    bound = source.bindings.get(value.name)
    if bound is None:
        return [Var(var_name(value.name))]  # a parameter: what the caller sends
    if value.name in seen or any(_pieces(v) is None and not isinstance(v, Ref) for v in bound):
        unread = next((v for v in bound if isinstance(v, Unread)), None)
        what = (
            f"is `{unread.text}` (line {unread.line}), not a string"
            if unread
            else "is not bound to a string in this file"
        )
        raise _unread(source, line, f"the {role} message: `{value.name}` {what}")
    if any(v != bound[0] for v in bound):
        raise _unread(
            source, line, f"the {role} message: `{value.name}` is bound to {len(bound)} values"
        )
    return _content(source, bound[0], role, line, seen | {value.name})
