"""On-disk response cache. The key is a hash of only what changes the answer."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from promptgen.secrets import redact, scrub_data


def cache_key(
    *,
    model: str,
    api_base: str | None,
    messages: list[dict[str, Any]],
    schema: dict[str, Any] | None,
    temperature: float | None,
    max_tokens: int | None,
    seed: int | None,
    variant: int,
    params: dict[str, Any] | None = None,
    schema_format: dict[str, Any] | None = None,
) -> str:
    """sha256 of the canonical JSON of the answer-changing inputs.

    Timeouts, concurrency, retries and credentials are deliberately not part of it (a
    key among the call parameters counts by name only), and only the hash is written
    to disk. Only whole answers are stored: the gateway never caches a failed, empty or
    cut-off reply, so running again asks for it again.
    """
    material = {
        "model": model,
        "api_base": api_base,
        "messages": messages,
        "schema": schema,
        "temperature": temperature,
        "max_tokens": max_tokens,
        "seed": seed,
        "variant": variant,
    }
    if params:
        material["params"] = redact(params)
    if schema_format is not None:  # the name, strict and description a schema is sent with
        material["schema_format"] = schema_format
    blob = json.dumps(material, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


class ResponseCache:
    """A thin wrapper over diskcache; values are plain JSON-able dicts."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.folder = folder
        import diskcache  # sqlite underneath: loaded only when the cache is used

        self._cache = diskcache.Cache(str(folder), size_limit=2**31)

    def get(self, key: str) -> dict[str, Any] | None:
        value = self._cache.get(key)
        return value if isinstance(value, dict) else None

    def set(self, key: str, value: dict[str, Any]) -> None:
        # A key the provider echoed in its answer is blanked, as in context.json.
        self._cache.set(key, scrub_data(value))

    def close(self) -> None:
        self._cache.close()
