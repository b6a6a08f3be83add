"""Bounds a provider was not told, kept on the answer: what is over a bound is cut to it.

The schema sent leaves out the length bounds (providers' strict modes refuse them, see
`structured.provider_schema`), and a provider may refuse more (a step-down to the schema
in the prompt), so an answer can come back with a list longer than its `maxItems` or a
string longer than its `maxLength`. Cutting it to the bound keeps the answer: the
first items, the text to its last word within the bound. The cut answer is taken only
when it then validates; otherwise the answer goes to the repair turn, whose error states
each bound it breaks (`stated`), lower bounds included ("at least 2 items").
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ValidationError

from promptgen.bounds import cut_text

# Rounds of cutting before giving up: each round cuts every value over its bound that the
# last validation reported (a list cut can uncover no new one, but nested lists may).
_ROUNDS = 8


def _cut_at(data: Any, path: list[Any], limit: int) -> tuple[Any, bool]:
    """`data` with the list or string at `path` cut to `limit`; False when the path does
    not lead to one (a union's branch name, a value pydantic converted)."""
    if not path:
        if isinstance(data, list):
            return data[:limit], True
        if isinstance(data, str):
            return cut_text(data, limit), True
        return data, False
    head, rest = path[0], path[1:]
    if isinstance(data, dict) and isinstance(head, str) and head in data:
        data[head], done = _cut_at(data[head], rest, limit)
        return data, done
    if isinstance(data, list) and isinstance(head, int) and 0 <= head < len(data):
        data[head], done = _cut_at(data[head], rest, limit)
        return data, done
    return data, False


def _cut_all(data: Any, cuts: list[tuple[list[Any], int]]) -> tuple[Any, bool]:
    """`data` with every cut made (deepest first, so a cut list does not move another's
    path); False when there was none to make, or one could not be made."""
    if not cuts:
        return data, False
    for path, limit in sorted(cuts, key=lambda c: len(c[0]), reverse=True):
        data, done = _cut_at(data, path, limit)
        if not done:
            return data, False
    return data, True


def fit_model(raw: str, model: type[BaseModel], error: ValidationError) -> BaseModel | None:
    """The answer's JSON `raw` validated after cutting what is over a bound of `model`
    (pydantic's `too_long` and `string_too_long`), or None: nothing to cut, or still
    invalid once cut."""
    cuts = _model_cuts(error)
    if not cuts:
        return None
    try:
        data = json.loads(raw)
    except json.JSONDecodeError:
        return None
    for _ in range(_ROUNDS):
        data, done = _cut_all(data, cuts)
        if not done:
            return None
        try:
            return model.model_validate_json(json.dumps(data, ensure_ascii=False))
        except ValidationError as again:
            cuts = _model_cuts(again)
    return None


def _model_cuts(error: ValidationError) -> list[tuple[list[Any], int]]:
    found = []
    for item in error.errors():
        limit = (item.get("ctx") or {}).get("max_length")
        if item["type"] in ("too_long", "string_too_long") and isinstance(limit, int):
            found.append((list(item["loc"]), limit))
    return found


def fit_json(value: Any, errors: Callable[[Any], list[Any]]) -> tuple[Any, bool]:
    """`value` (JSON) with what is over a `maxItems` or `maxLength` of its JSON Schema cut
    to the bound; True when that made it valid. `errors(value)`: the jsonschema
    validation errors of a value."""
    found = errors(value)
    for _ in range(_ROUNDS):
        if not found:
            return value, True
        cuts = [
            (list(e.absolute_path), e.validator_value)
            for e in found
            if e.validator in ("maxItems", "maxLength") and isinstance(e.validator_value, int)
        ]
        value, done = _cut_all(value, cuts)
        if not done:
            return value, False
        found = errors(value)
    return value, not found


# What a length keyword counts, once and more than once.
_UNITS = {
    "Items": ("item", "items"),
    "Length": ("character", "characters"),
    "Properties": ("property", "properties"),
}


def stated(error: Any) -> str | None:
    """A jsonschema error on a length bound, said with the bound ("has 1 item, needs at
    least 2 (minItems: 2)"); None for any other error (its own message states it)."""
    keyword = str(error.validator)
    side, counted = keyword[:3], keyword[3:]
    bound, instance = error.validator_value, error.instance
    if side not in ("min", "max") or counted not in _UNITS or not isinstance(bound, int):
        return None
    if not isinstance(instance, list | str | dict):
        return None
    one, many = _UNITS[counted]
    has = f"{len(instance)} {one if len(instance) == 1 else many}"
    need = f"needs at least {bound}" if side == "min" else f"at most {bound} allowed"
    return f"has {has}, {need} ({keyword}: {bound})"
