"""Answers with one part per numbered item: properties "1" .. "N".

The schema sent requires every number, so a server that follows the schema cannot
leave an item out or answer for a number that was not asked. Parsing is lenient per
item: a missing or malformed item becomes None instead of sinking the whole answer, and
the stage asks for that item again in a smaller call.
"""

from __future__ import annotations

import functools
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, WrapValidator, create_model


def _or_none(value: Any, handler: Any) -> Any:
    try:
        return handler(value)
    except ValidationError:
        return None


def _require_values(schema: dict[str, Any]) -> None:
    """Each numbered property asks for a value (never null) in the schema sent."""
    for prop in schema.get("properties", {}).values():
        branches = prop.pop("anyOf", None)
        if branches:
            prop.update(next(b for b in branches if b.get("type") != "null"))


@functools.lru_cache(maxsize=256)
def keyed_model(name: str, keys: tuple[str, ...], item: Any) -> type[BaseModel]:
    """A model named `name` with one property per key, each of type `item`."""
    lenient = Annotated[item | None, WrapValidator(_or_none)]
    fields: dict[str, Any] = {
        f"k{i}": (lenient, Field(None, alias=key)) for i, key in enumerate(keys)
    }
    config = ConfigDict(populate_by_name=True, json_schema_extra=_require_values)
    return create_model(name, __config__=config, **fields)


def lenient_keyed(name: str, fields: dict[str, Any]) -> type[BaseModel]:
    """A model of the given (type, Field) pairs, each parsed leniently (a malformed part
    becomes None) and required in the schema sent."""
    lenient: dict[str, Any] = {
        k: (Annotated[t | None, WrapValidator(_or_none)], f) for k, (t, f) in fields.items()
    }
    config = ConfigDict(populate_by_name=True, json_schema_extra=_require_values)
    return create_model(name, __config__=config, **lenient)


def numbered_model(name: str, count: int, item: Any) -> type[BaseModel]:
    """A model named `name` with properties "1" .. "count" of type `item`."""
    return keyed_model(name, tuple(str(i) for i in range(1, count + 1)), item)


def keyed_answers(parsed: BaseModel) -> dict[str, Any]:
    """Key -> its answer, for the keys answered well."""
    values = {
        info.alias or name: getattr(parsed, name)
        for name, info in type(parsed).model_fields.items()
    }
    return {key: value for key, value in values.items() if value is not None}


def answers(parsed: BaseModel) -> dict[int, Any]:
    """Item number -> its answer, for the items answered well."""
    return {int(key): value for key, value in keyed_answers(parsed).items()}
