"""OpenAI chat messages as JSON: a list of `{role, content}`, or an object with
`messages` (and maybe `model`, `temperature`, ... and sample `variables`)."""

from __future__ import annotations

import json
from typing import Any

from promptgen.errors import BadInputError
from promptgen.importing.pieces import Imported, Msg, Piece, role_of, template_pieces

_PARAMS = ("temperature", "top_p", "max_tokens", "max_completion_tokens", "seed",
           "frequency_penalty", "presence_penalty", "stop", "response_format")  # fmt: skip
_SAMPLE_KEYS = ("variables", "inputs", "sample", "input_values")


def looks_like_messages(text: str) -> bool:
    try:
        data = json.loads(text)
    except ValueError:
        return False
    items = data.get("messages") if isinstance(data, dict) else data
    return isinstance(items, list) and bool(items) and all(isinstance(m, dict) for m in items)


def read_messages_json(text: str, file: str) -> Imported:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise BadInputError(f"not JSON: {err.msg}", file=file, line=err.lineno) from err
    items = data.get("messages") if isinstance(data, dict) else data
    if not isinstance(items, list) or not items:
        raise BadInputError(
            "no messages",
            file=file,
            hint='give a list of {"role", "content"} or {"messages": [...]}',
        )
    messages = [_message(item, i, file) for i, item in enumerate(items)]
    imported = Imported(kind="openai-json", messages=messages)
    if isinstance(data, dict):
        model = data.get("model")
        imported.model = model if isinstance(model, str) else None
        imported.parameters = {k: data[k] for k in _PARAMS if k in data}
        for key in _SAMPLE_KEYS:
            if isinstance(data.get(key), dict):
                imported.samples = dict(data[key])
                break
    return imported


def _message(item: Any, index: int, file: str) -> Msg:
    given = item.get("role") if isinstance(item, dict) else item
    role = role_of(str(given)) if isinstance(item, dict) else None
    if role is None:
        raise BadInputError(
            f"message {index + 1}: no role promptgen knows ({given!r})",
            file=file,
            hint="use system, developer, user or assistant",
        )
    content = item.get("content")
    if isinstance(content, list):  # content parts: the text ones, joined
        content = "\n".join(
            str(p.get("text", ""))
            for p in content
            if isinstance(p, dict) and p.get("type") == "text"
        )
    if not isinstance(content, str):
        raise BadInputError(f"message {index + 1}: its content is not text", file=file)
    pieces: list[Piece] = template_pieces(content)[1]
    return Msg(role, pieces)
