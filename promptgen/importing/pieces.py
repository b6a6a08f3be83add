"""What every source reader produces: messages made of literal text and variables.

Readers never write template syntax: the writer turns `Var` into `{{name}}` and
escapes literal text, so a `{{` in the source stays text in the `.prompty`.
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass, field
from typing import Any

from promptgen.formats.body import parse_messages


@dataclass(frozen=True)
class Var:
    name: str


Piece = str | Var


@dataclass
class Msg:
    role: str
    pieces: list[Piece]

    @property
    def variables(self) -> list[str]:
        return [p.name for p in self.pieces if isinstance(p, Var)]

    @property
    def text(self) -> str:
        return "".join(p if isinstance(p, str) else "" for p in self.pieces)


@dataclass
class Imported:
    """A prompt read from a source that is not a prompt file."""

    kind: str  # text, template, langchain, python, javascript, openai-json
    messages: list[Msg]
    samples: dict[str, Any] = field(default_factory=dict)
    parameters: dict[str, Any] = field(default_factory=dict)
    model: str | None = None
    warnings: list[str] = field(default_factory=list)
    description: str | None = None
    name: str | None = None
    types: dict[str, str] = field(default_factory=dict)  # proposed by the rules model
    descriptions: dict[str, str] = field(default_factory=dict)

    @property
    def variables(self) -> list[str]:
        return list(dict.fromkeys(v for m in self.messages for v in m.variables))


# Names a Jinja template cannot read as an input, or reads as something else.
_RESERVED = {"true", "false", "none", "loop", "self", "caller", "varargs", "kwargs"}
_FIELD = re.compile(
    r"\{([A-Za-z_][A-Za-z0-9_]*)((?:\.[A-Za-z_]\w*|\[[^\]{}]*\])*)(![rsa])?(:[^{}]*)?\}"
)
_MUSTACHE = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
_ROLES = {"system": "system", "developer": "system", "user": "user", "human": "user",
          "assistant": "assistant", "ai": "assistant"}  # fmt: skip


def var_name(text: str) -> str:
    """A variable name a template can use, from any expression's text."""
    text = text.strip()
    name = text if text.isidentifier() else re.sub(r"[\W_]+", "_", text).strip("_") or "value"
    if name[0].isdigit():
        name = f"v_{name}"
    if name.lower() in _RESERVED or keyword.iskeyword(name):
        name = f"{name}_value"
    return name


def role_of(label: str) -> str | None:
    return _ROLES.get(label.strip().lower())


def merge_text(pieces: list[Piece]) -> list[Piece]:
    out: list[Piece] = []
    for piece in pieces:
        if isinstance(piece, str) and out and isinstance(out[-1], str):
            out[-1] += piece
        elif piece != "":
            out.append(piece)
    return out


def format_pieces(text: str) -> list[Piece]:
    """A str.format / LangChain template: `{name}` is a variable, `{{` and `}}` are
    braces; anything else in braces (JSON in an example, say) stays text."""
    out: list[Piece] = []
    i = 0
    while i < len(text):
        if text.startswith(("{{", "}}"), i):
            out.append(text[i])
            i += 2
            continue
        match = _FIELD.match(text, i) if text[i] == "{" else None
        if match:
            out.append(Var(var_name(match.group(1) + (match.group(2) or ""))))
            i = match.end()
            continue
        out.append(text[i])
        i += 1
    return merge_text(out)


def mustache_pieces(text: str) -> list[Piece]:
    """`{{name}}` placeholders (Mustache, GitHub Models, Jinja) as variables."""
    out: list[Piece] = []
    last = 0
    for match in _MUSTACHE.finditer(text):
        out += [text[last : match.start()], Var(var_name(match.group(1)))]
        last = match.end()
    out.append(text[last:])
    return merge_text(out)


def template_pieces(text: str) -> tuple[str, list[Piece]]:
    """The placeholder style a text uses and its pieces: `langchain` ({name}),
    `template` ({{name}}), or `text` (none)."""
    # A single-brace field means LangChain's style, where `{{ x }}` is escaped braces.
    pieces = format_pieces(text)
    if any(isinstance(p, Var) for p in pieces):
        return "langchain", pieces
    pieces = mustache_pieces(text)
    if any(isinstance(p, Var) for p in pieces):
        return "template", pieces
    return "text", [text]


def text_messages(text: str, file: str) -> tuple[str, list[Msg]]:
    """Plain text or a template; role-marker lines (`system:`, `user:`) split messages."""
    kinds: set[str] = set()
    messages = []
    for message in parse_messages(text, file):
        kind, pieces = template_pieces(message.content)
        kinds.add(kind)
        messages.append(Msg(message.role, pieces))
    kind = next((k for k in ("template", "langchain") if k in kinds), "text")
    if len(messages) == 1 and messages[0].variables:
        messages[0].role = "user"  # a lone template is what the user sends, filled in
    return kind, messages
