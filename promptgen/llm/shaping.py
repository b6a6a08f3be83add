"""A schema shaped to a provider profile (llm/profiles.py) before it is sent.

Shaping never changes what an answer must be: the pydantic model (or the Draft 2020-12
validation of a raw schema) still checks every bound. It changes what the provider is
told, as each profile's rules require:

- a keyword the profile refuses or ignores moves into the field's `description`
  (`minimum: 0, maximum: 100` -> "At least 0, at most 100.");
- where a union limit would be passed (Anthropic: 16 fields with anyOf or a type list,
  counted with `$defs` inlined, as litellm sends them), nullable fields require a
  value, the most repeated first: a generated test's inputs, one set per test slot;
- where objects would nest deeper than the profile allows, an object marked as one
  that may be written as JSON text (`schema_walk.JSON_TEXT`: a test input shaped like
  its nested sample) is asked as a string holding that JSON;
- `$defs` are inlined where the server cannot follow them (Ollama).
"""

from __future__ import annotations

import copy
import json

from promptgen.llm.profiles import PROFILES, TOLD, Profile
from promptgen.llm.schema_walk import (
    Schema,
    at,
    deepest,
    inlined,
    is_union,
    unmarked,
    uses,
    walk,
)

# (id(schema), profile) -> (schema, its shaped form): a stage sends one schema object
# thousands of times, so it is shaped once per profile. The schema is held, so its id is
# not reused while cached; the result is read-only.
_SHAPED: dict[tuple[int, str], tuple[Schema, Schema]] = {}
_MAX_CACHED = 1024


def shape(schema: Schema, profile: str) -> Schema:
    """`schema` as `profile` takes it (see the module's docstring)."""
    key = (id(schema), profile)
    known = _SHAPED.get(key)
    if known is not None and known[0] is schema:
        return known[1]
    if len(_SHAPED) >= _MAX_CACHED:
        _SHAPED.clear()
    rules = PROFILES[profile]
    shaped = inlined(schema) if rules.inline_refs else copy.deepcopy(schema)
    _tell(shaped, rules)
    if rules.max_unions is not None:
        _fewer_unions(shaped, rules.max_unions)
    if rules.max_depth is not None:
        _shallower(shaped, rules.max_depth)
    shaped = unmarked(shaped)
    _SHAPED[key] = (schema, shaped)
    return shaped


def told(node: Schema, keywords: list[str]) -> str:
    """One sentence saying what `keywords` of `node` ask: "At least 0, at most 100."."""
    parts = []
    for key in keywords:
        value = node[key]
        shown = value if isinstance(value, str | int | float) else json.dumps(value)
        parts.append(TOLD[key].format(shown))
    text = ", ".join(parts)
    return text[:1].upper() + text[1:] + "."


def _described(node: Schema, sentence: str) -> None:
    before = str(node.get("description") or "").strip()
    node["description"] = f"{before} {sentence}" if before else sentence


def _tell(schema: Schema, rules: Profile) -> None:
    """Every keyword `rules` does not keep, moved into its field's description."""
    for _, node in list(walk(schema)):
        moved = [k for k in TOLD if k in node and not rules.keeps(node, k)]
        if moved:
            sentence = told(node, moved)
            for key in moved:
                del node[key]
            _described(node, sentence)


def _nullable(node: Schema) -> bool:
    kind = node.get("type")
    if isinstance(kind, list):
        return len(kind) == 2 and "null" in kind
    branches = node.get("anyOf")
    return isinstance(branches, list) and len(branches) == 2 and {"type": "null"} in branches


def _without_null(node: Schema) -> None:
    """A nullable field (`anyOf [X, null]` or `type [t, "null"]`) made to require X."""
    kind = node.get("type")
    if isinstance(kind, list):
        node["type"] = next(t for t in kind if t != "null")
        return
    kept = dict(next(b for b in node.pop("anyOf") if b != {"type": "null"}))
    outer = str(node.pop("description", None) or "")
    inner = str(kept.pop("description", None) or "")
    node.update(kept)
    if outer or inner:
        node["description"] = f"{outer} {inner}".strip()


def _fewer_unions(schema: Schema, limit: int) -> None:
    """Nullable fields made to require a value, the most repeated first, until the
    inlined schema has at most `limit` union fields."""
    counts = uses(schema)
    total = sum(n for path, n in counts.items() if is_union(at(schema, path)))
    sites = sorted(
        ((n, path) for path, n in counts.items() if _nullable(at(schema, path))),
        key=lambda site: -site[0],
    )
    for n, path in sites:
        if total <= limit:
            return
        _without_null(at(schema, path))
        total -= n


def _shallower(schema: Schema, limit: int) -> None:
    """Marked objects asked as JSON text, the deepest first, until no path has more than
    `limit` object levels."""
    for _ in range(64):
        depth, path = deepest(schema)
        if depth <= limit:
            return
        marked = [(level, where) for level, where, mark in path if mark and level <= limit + 1]
        if not marked:
            return  # nothing on that path may be written as text: schema_rules says so
        _, where = max(marked)
        node = at(schema, where)
        keys = ", ".join(node.get("properties", {}))
        before = str(node.get("description") or "").strip()
        text = f"JSON text of an object with the keys {keys}."
        node.clear()
        node.update({"type": "string", "description": f"{before} {text}".strip()})
