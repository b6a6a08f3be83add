"""`promptgen import`: a prompt that is not a prompt file yet (plain text, a Python or
JavaScript string, OpenAI messages JSON, a LangChain template) as a `.prompty`.

What can be parsed is read deterministically; only a prompt with no placeholders asks
the rules model which parts are its inputs (`name_inputs`). See docs/setup.md.
"""

from __future__ import annotations

import ast
import re
import tempfile
from pathlib import Path

from promptgen.errors import BadInputError, PromptgenError
from promptgen.formats import load_prompt
from promptgen.importing.js_source import read_javascript
from promptgen.importing.json_source import looks_like_messages, read_messages_json
from promptgen.importing.named import ImportAnswer, name_inputs
from promptgen.importing.pieces import Imported, Msg, Var, text_messages
from promptgen.importing.python_source import read_python
from promptgen.importing.writer import input_type, prompty_text
from promptgen.model import PromptUnderTest

KINDS = ("text", "python", "javascript", "openai-json")
_SUFFIXES = {".py": "python", ".json": "openai-json", ".js": "javascript", ".mjs": "javascript",
             ".cjs": "javascript", ".ts": "javascript", ".jsx": "javascript",
             ".tsx": "javascript", ".mts": "javascript"}  # fmt: skip
_JS_START = re.compile(r"^\s*(const|let|var|export|import)\b|^\s*`", re.MULTILINE)
DEFAULT_INPUT = "input"

__all__ = [
    "KINDS",
    "ImportAnswer",
    "Imported",
    "detect_kind",
    "finish",
    "input_type",
    "name_inputs",
    "read_source",
    "slug",
    "to_prompty",
    "verify",
]


def detect_kind(text: str, suffix: str = "") -> str:
    """Which reader a source needs: by its suffix, else by its content."""
    if suffix.lower() in _SUFFIXES:
        return _SUFFIXES[suffix.lower()]
    if text.lstrip()[:1] in "[{" and looks_like_messages(text):
        return "openai-json"
    if _is_python(text):
        return "python"
    if (_JS_START.search(text) and "=" in text) or text.lstrip().startswith("`"):
        return "javascript"
    return "text"


def _is_python(text: str) -> bool:
    """Python that holds a string (plain prose almost never parses as Python)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    return any(
        isinstance(node, ast.JoinedStr)
        or (isinstance(node, ast.Constant) and isinstance(node.value, str))
        for node in ast.walk(tree)
    )


def read_source(text: str, file: str, kind: str) -> Imported:
    if kind == "python":
        return read_python(text, file)
    if kind == "javascript":
        return read_javascript(text, file)
    if kind == "openai-json":
        return read_messages_json(text, file)
    if kind != "text":
        raise BadInputError(f"unknown kind {kind!r}", hint=f"use one of {', '.join(KINDS)}")
    if not text.strip():
        raise BadInputError("the prompt is empty", file=file)
    found, messages = text_messages(text, file)
    return Imported(kind=found, messages=messages)


def finish(imported: Imported) -> None:
    """A prompt left with no inputs gets one, sent after it, so tests have somewhere to go."""
    if imported.variables:
        return
    imported.messages.append(Msg("user", [Var(DEFAULT_INPUT)]))
    imported.descriptions.setdefault(DEFAULT_INPUT, "The text the prompt works on.")


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60] or "imported-prompt"


def verify(text: str, name: str) -> PromptUnderTest:
    """The written `.prompty` read back by promptgen's own loader (a failure is a bug)."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"{name}.prompty"
        path.write_text(text, encoding="utf-8")
        try:
            return load_prompt(path)
        except PromptgenError as err:
            raise PromptgenError(f"the imported prompt does not load back: {err.message}") from err


def to_prompty(imported: Imported, name: str, source: str) -> str:
    description = imported.description or f"Imported from {source} ({imported.kind})."
    return prompty_text(imported, name, description)
