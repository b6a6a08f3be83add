"""Prompts in JavaScript/TypeScript source, read with a small tokenizer (never run):
'...' and "..." strings, template literals with `${expr}`, `+` concatenation, and
messages arrays of `{role, content}` objects."""

from __future__ import annotations

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
        return self.concat()

    def concat(self) -> list[Piece] | None:
        parts: list[Piece] = []
        while True:
            tok = self.peek()
            if tok is None:
                return None
            if tok.kind == "str":
                parts += tok.value
            elif tok.kind == "ident":
                parts.append(Var(var_name(self.dotted())))
            else:
                return None
            self.i += 1
            if not self.is_punct("+"):
                return merge_text(parts) if any(isinstance(p, str) for p in parts) else None
            self.i += 1

    def dotted(self) -> str:
        names = [self.toks[self.i].value]
        while self.is_punct(".", 1) and (nxt := self.peek(2)) and nxt.kind == "ident":
            self.i += 2
            names.append(self.toks[self.i].value)
        return ".".join(names)

    def array(self) -> list[Any]:
        self.i += 1
        items = []
        while self.peek() is not None and not self.is_punct("]"):
            items.append(self.value())
            if self.is_punct(","):
                self.i += 1
            elif not self.is_punct("]"):
                self.i += 1  # something this parser does not read
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
    while parser.i < len(toks):
        tok = toks[parser.i]
        if tok.kind == "ident" and (parser.is_punct("=", 1) and not parser.is_punct("=", 2)):
            parser.i += 2
            _record(found, tok.value, parser.value(), tok.line)
        elif (parser.is_punct("{") or parser.is_punct("[")) and _argument(toks, parser.i):
            _record(found, None, parser.value(), tok.line)
        else:
            parser.i += 1
    return choose(found, "javascript", file)


def _argument(toks: list[Tok], i: int) -> bool:
    """An object or array passed to a call (`create({...})`), not a block of code."""
    before = toks[i - 1] if i else None
    return before is not None and before.kind == "punct" and before.value in "(,"


def _record(found: Found, name: str | None, value: Any, line: int) -> None:
    if isinstance(value, dict):
        for key, (inner, at) in value.items():
            _record(found, key, inner, at)
    elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        messages = _messages(value)
        if messages:
            found.message_lists.append(messages)
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


def _messages(items: list[dict[str, Any]]) -> list[Msg] | None:
    out = []
    for item in items:
        role = item.get("role", (None,))[0]
        content = item.get("content", (None,))[0]
        text_role = (
            "".join(role)
            if isinstance(role, list) and all(isinstance(r, str) for r in role)
            else None
        )
        mapped = role_of(text_role) if text_role else None
        if mapped is None or not isinstance(content, list):
            return None
        out.append(Msg(mapped, content))
    return out
