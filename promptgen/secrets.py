"""Keep credentials out of everything promptgen writes (context, cache keys, logs, reports)."""

from __future__ import annotations

import re
from typing import Any

REDACTED = "***redacted***"
# Compared on the key lowercased with everything but letters and digits removed, so
# `api_key`, `apiKey`, `API-KEY` and `Ocp-Apim-Subscription-Key` all match, while
# `max_tokens` or `prompt_tokens` (counts, not secrets) do not.
_EXACT = {"key", "token", "bearer", "authorization", "auth", "pwd", "cookie"}
_SUFFIXES = (
    "apikey",
    "secret",
    "secretkey",
    "password",
    "passwd",
    "passphrase",
    "token",
    "accesskey",
    "privatekey",
    "subscriptionkey",
    "credential",
    "credentials",
    "connectionstring",
    "sastoken",
)


def is_secret_key(key: str) -> bool:
    norm = re.sub(r"[^a-z0-9]", "", key.lower())
    return norm in _EXACT or norm.endswith(_SUFFIXES)


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
