"""Length bounds that clip instead of reject.

The schema sent to a provider has its length bounds stripped (strict modes refuse
them), so a server that follows the schema it receives may answer longer strings and
lists than the bounds allow. The bounds stay in the JSON Schema (the embedded model's
grammar enforces them) but validation clips an over-long value to the bound instead of
rejecting the whole answer. Lower bounds still reject: an empty rule is not a rule.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Field

from promptgen.bounds import cut_text


def clip_text(value: Any, limit: int) -> Any:
    """`value` cut to `limit` characters, at a word boundary when one is near."""
    return cut_text(value, limit) if isinstance(value, str) else value


def clip_items(value: Any, limit: int) -> Any:
    return value[:limit] if isinstance(value, list) else value


def Text(max_length: int, min_length: int = 0, description: str | None = None) -> Any:
    """A string type bounded to `max_length` characters, clipped when longer."""
    field = Field(min_length=min_length or None, max_length=max_length, description=description)
    return Annotated[str, BeforeValidator(lambda v: clip_text(v, max_length)), field]


def Items(item: Any, max_length: int, min_length: int = 0, description: str | None = None) -> Any:
    """A list of `item` with at most `max_length` entries, clipped when longer."""
    field = Field(min_length=min_length or None, max_length=max_length, description=description)
    return Annotated[list[item], BeforeValidator(lambda v: clip_items(v, max_length)), field]
