"""Keep credentials out of everything promptgen writes (context, cache keys, logs, reports)."""

from __future__ import annotations

import re
from typing import Any

REDACTED = "***redacted***"
_SECRET_KEY = re.compile(
    r"(api[_-]?key|apikey|secret|password|passwd|token|credential|authorization|^key$)", re.I
)


def is_secret_key(key: str) -> bool:
    return bool(_SECRET_KEY.search(key))


def redact(value: Any) -> Any:
    """A copy of `value` with every secret-looking mapping entry replaced.

    `${env:VAR}` references are kept: they name a variable, they are not the secret.
    """
    if isinstance(value, dict):
        out: dict[Any, Any] = {}
        for k, v in value.items():
            if isinstance(k, str) and is_secret_key(k) and v not in (None, ""):
                keep = isinstance(v, str) and v.startswith("${env:")
                out[k] = v if keep else REDACTED
            else:
                out[k] = redact(v)
        return out
    if isinstance(value, list):
        return [redact(v) for v in value]
    return value
