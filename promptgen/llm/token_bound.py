"""The most tokens a JSON answer of a schema can take: the embedded model's `max_tokens`
for a call that has a schema, so a call never waits on more than its answer can hold.

Counted in UTF-8 bytes, which no byte-level tokenizer exceeds: a string of `maxLength`
characters is at most 4 bytes a character and its quotes; a number 24; each key with its
quotes, colon and comma; `WHITESPACE` bytes between tokens of the grammar (llama.cpp's
JSON grammar allows a bounded run of spaces). A schema with a string, array or object
without a bound has no bound (None)."""

from __future__ import annotations

import json
from typing import Any

WHITESPACE = 22  # llama.cpp's JSON grammar: a newline and up to 20 spaces or tabs
SCALAR = {"integer": 24, "number": 32, "boolean": 5, "null": 4}


def answer_bound(schema: dict[str, Any]) -> int | None:
    """Bytes (so tokens) the longest answer of `schema` takes, or None when unbounded."""
    return _bound(schema, schema.get("$defs", {}), 0)


def _bound(node: Any, defs: dict[str, Any], depth: int) -> int | None:
    if not isinstance(node, dict) or depth > 32:
        return None
    if "$ref" in node:
        return _bound(defs.get(str(node["$ref"]).rsplit("/", 1)[-1]), defs, depth + 1)
    for key in ("enum", "const"):
        if key in node:
            values = node[key] if key == "enum" else [node[key]]
            return max(len(json.dumps(v, ensure_ascii=False).encode()) for v in values)
    for key in ("anyOf", "oneOf"):
        if key in node:
            options = [_bound(option, defs, depth + 1) for option in node[key]]
            return None if None in options else max(b for b in options if b is not None)
    kind = node.get("type")
    if isinstance(kind, str) and kind in SCALAR:
        return SCALAR[kind]
    if kind == "string":
        longest = node.get("maxLength")
        return 4 * longest + 2 if isinstance(longest, int) else None
    if kind == "array":
        count, item = node.get("maxItems"), _bound(node.get("items"), defs, depth + 1)
        if not isinstance(count, int) or item is None:
            return None
        return 2 + count * (item + 1 + WHITESPACE)
    if kind == "object":
        if node.get("additionalProperties", False) is not False and "properties" not in node:
            return None
        total = 2
        for name, value in node.get("properties", {}).items():
            inner = _bound(value, defs, depth + 1)
            if inner is None:
                return None
            total += len(json.dumps(name, ensure_ascii=False).encode()) + 2 + inner
            total += 2 * WHITESPACE
        return total
    return None
