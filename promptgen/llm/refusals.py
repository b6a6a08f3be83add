"""Structured-output modes a server refused (HTTP 400), kept per model and schema.

A server that refuses the `json_schema` of one schema (a keyword its rules do not
allow, a nesting too deep) may take every other schema: the step-down to `json_object`
(or to the schema in the prompt alone) is kept for that schema on that model only, keyed
by the model id, the schema's name and a hash of the schema. Each refusal becomes a
`SchemaRefusal` record: said once on stderr, saved in context.json, shown in the
report; under --strict-output it is an error instead (`SchemaRefusedError`).
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from promptgen.errors import SchemaRefusedError
from promptgen.results import SchemaRefusal
from promptgen.secrets import scrub

# Structured-output modes, strongest first; a server that refuses one gets the next.
MODES = ("json_schema", "json_object", "prompt")
# The longest reason kept of a server's message.
MESSAGE_CHARS = 300
# What the transports put before a server's own message: litellm's exception name and
# provider ("litellm.BadRequestError: OpenAIException - "), the HTTP client's status.
_PREFIXES = re.compile(
    r"^(?:litellm\.\w+:\s*)?(?:\w+Exception\s+-\s+)?(?:Error code:\s*\d+\s+-\s+)?", re.I
)

Key = tuple[str, str, str]  # model id, schema name, schema hash


def reason(message: str) -> str:
    """The server's own words from a call error's message: the transport's prefixes
    dropped, keys scrubbed, one line, at most MESSAGE_CHARS characters."""
    text = " ".join(scrub(message).split())
    text = _PREFIXES.sub("", text, count=1) or text
    return text if len(text) <= MESSAGE_CHARS else text[: MESSAGE_CHARS - 1] + "…"


# id(schema) -> (schema, its hash): one schema object is sent thousands of times (a
# stage's judge), and it is hashed only where its model refused a schema of its name.
_DIGESTS: dict[int, tuple[dict[str, Any], str]] = {}


def digest(schema: dict[str, Any]) -> str:
    known = _DIGESTS.get(id(schema))
    if known is not None and known[0] is schema:
        return known[1]
    if len(_DIGESTS) >= 512:
        _DIGESTS.clear()
    blob = json.dumps(schema, sort_keys=True, ensure_ascii=False, default=str)
    value = hashlib.sha256(blob.encode()).hexdigest()[:16]
    _DIGESTS[id(schema)] = (schema, value)
    return value


def lower(a: str, b: str) -> str:
    """The weaker of two structured-output modes."""
    return a if MODES.index(a) >= MODES.index(b) else b


class SchemaModes:
    """The modes refused so far, shared by every run of a gateway (a batch's too)."""

    def __init__(self) -> None:
        self._modes: dict[Key, str] = {}
        self._records: dict[Key, list[SchemaRefusal]] = {}
        self._names: set[tuple[str, str]] = set()  # (model, schema name) with a refusal

    def key(self, model_id: str, name: str, schema: dict[str, Any]) -> Key | None:
        """The key of a schema on a model, None when no schema of its name was refused
        there (the hash is not computed then)."""
        if (model_id, name) not in self._names:
            return None
        return (model_id, name, digest(schema))

    def mode(self, key: Key) -> str | None:
        return self._modes.get(key)

    def records(self, key: Key) -> list[SchemaRefusal]:
        return self._records.get(key, [])

    def refused(
        self,
        model_id: str,
        name: str,
        schema: dict[str, Any],
        refusals: list[tuple[str, str]],
        instead: str | None,
    ) -> tuple[Key, list[SchemaRefusal]]:
        """Record that `model_id` refused `schema` in each mode of `refusals` (mode, the
        server's message) and answered in `instead` (None: not asked again, strict)."""
        self._names.add((model_id, name))
        key = (model_id, name, digest(schema))
        kept: dict[str, SchemaRefusal] = {r.mode: r for r in self._records.get(key, [])}
        for mode, message in refusals:
            known = kept.get(mode)
            if known is None or (known.instead is None and instead is not None):
                kept[mode] = SchemaRefusal.model_validate(
                    {
                        "model": model_id,
                        "schema_name": name,
                        "mode": mode,
                        "instead": instead,
                        "message": reason(message),
                    }
                )
        self._records[key] = [kept[m] for m in MODES if m in kept]
        if instead is not None:
            known_mode = self._modes.get(key)
            self._modes[key] = lower(known_mode, instead) if known_mode else instead
        return key, self._records[key]


def strict_error(refusal: SchemaRefusal) -> SchemaRefusedError:
    """The error --strict-output stops the run with."""
    return SchemaRefusedError(
        refusal.said(),
        hint="--strict-output; without it the schema is asked in the prompt instead",
    )
