"""Keep credentials out of everything promptgen writes (context, cache keys, logs, reports).

Two tools: `redact` blanks secret-named entries of a mapping (frontmatter, options,
connection settings); `scrub` blanks secrets inside free text, above all the error
messages providers send back, which sometimes quote the key or the headers they got.
`scrub` knows every key value registered with `register` (the gateway registers the
keys it can see: environment variables, a prompt's connection and call parameters)
plus the shapes keys come in (`sk-...`, `Bearer ...`, `api-key: ...`, `token=...`).
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterable, Mapping
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
# Environment variables holding keys: OPENAI_API_KEY, AZURE_OPENAI_KEY, GITHUB_TOKEN, ...
_ENV_SUFFIXES = ("_KEY", "_TOKEN", "_SECRET", "_PASSWORD", "_PAT")
# Shell variables whose names look like a key's (`pwd`) but hold the working folder:
# registering them would blank every path under it.
_NOT_SECRET_ENV = {"PWD", "OLDPWD"}
# Shorter values are not registered: scrubbing "abc" out of every message would
# garble the messages without protecting anything.
MIN_SECRET_LENGTH = 8


# Words that make a variable's name a credential's wherever they stand in it.
_SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH", "COOKIE")


def is_secret_name(name: str) -> bool:
    """An environment variable that looks like a credential: KEY, TOKEN, SECRET,
    PASSWORD, ... anywhere in its name, or ending in _PAT."""
    upper = name.upper()
    return any(w in upper for w in _SECRET_WORDS) or upper.endswith("_PAT")


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


# -- known values ----------------------------------------------------------------------

_lock = threading.Lock()
_known: set[str] = set()
_known_pattern: re.Pattern[str] | None = None


def register(value: object) -> None:
    """Remember a key value, so `scrub` replaces it wherever it appears."""
    global _known_pattern
    if not isinstance(value, str):
        return
    value = value.strip()
    if len(value) < MIN_SECRET_LENGTH or value.startswith("${env:") or value == REDACTED:
        return
    with _lock:
        if value not in _known:
            _known.add(value)
            _known_pattern = None


def register_mapping(value: Any) -> None:
    """Register every value stored under a secret-looking name, at any depth
    (`{api_key: ..., extra_headers: {Authorization: "Bearer ..."}}`)."""
    if isinstance(value, Mapping):
        for k, v in value.items():
            if isinstance(k, str) and is_secret_key(k) and isinstance(v, str):
                register(v)
                register(_BEARER_PREFIX.sub("", v))  # the token without "Bearer "
            else:
                register_mapping(v)
    elif isinstance(value, list | tuple):
        for v in value:
            register_mapping(v)


def register_environment(env: Mapping[str, str] = os.environ) -> None:
    """Register the keys in the environment (OPENAI_API_KEY, AZURE_*_KEY, ...)."""
    for name, value in env.items():
        if name.upper() in _NOT_SECRET_ENV:
            continue
        if name.upper().endswith(_ENV_SUFFIXES) or is_secret_key(name):
            register(value)


def forget(values: Iterable[str] | None = None) -> None:
    """Forget registered values (all when None); for tests."""
    global _known_pattern
    with _lock:
        if values is None:
            _known.clear()
        else:
            _known.difference_update(values)
        _known_pattern = None


def _known_values() -> re.Pattern[str] | None:
    global _known_pattern
    with _lock:
        if _known_pattern is None and _known:
            # Longest first, so a key is never half-replaced by a shorter one inside it.
            ordered = sorted(_known, key=len, reverse=True)
            _known_pattern = re.compile("|".join(map(re.escape, ordered)))
        return _known_pattern


# -- shapes of keys ----------------------------------------------------------------------

_BEARER_PREFIX = re.compile(r"^\s*(?:bearer|basic|token)\s+", re.I)
_TOKEN_CHARS = r"[A-Za-z0-9+/_.~=-]"
# (pattern, replacement): each keeps the name and separator, and blanks the value.
_SHAPES: tuple[tuple[re.Pattern[str], str], ...] = (
    # Header lines or dict entries: Authorization: Bearer x, 'api-key': 'x', x-api-key=x
    (
        re.compile(
            r"(?i)(\b(?:proxy-)?authorization|\b(?:x-)?api[-_]?key|\bocp-apim-subscription-key"
            r"|\bx-goog-api-key)(['\"]?\s*[:=]\s*['\"]?)((?:bearer|basic|token)\s+)?"
            r"([^\s'\",;}\]]+)"
        ),
        rf"\1\2\3{REDACTED}",
    ),
    (re.compile(rf"(?i)\b(bearer)\s+{_TOKEN_CHARS}{{8,}}"), rf"\1 {REDACTED}"),
    # Provider key formats: OpenAI/Anthropic sk-..., GitHub, Google, Slack, AWS.
    (re.compile(r"\bsk-[A-Za-z0-9_-]{8,}"), REDACTED),
    (re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"), REDACTED),
    (re.compile(r"\bAIza[0-9A-Za-z_-]{30,}"), REDACTED),
    (re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}"), REDACTED),
    (re.compile(r"\bAKIA[0-9A-Z]{16}\b"), REDACTED),
    # key=..., access_token: ..., "client_secret": "..." with a long token-like value.
    (
        re.compile(
            r"(?i)(\b[\w-]*(?:key|token|secret|password|passwd|signature|sig))"
            rf"(['\"]?\s*[=:]\s*['\"]?)({_TOKEN_CHARS}{{16,}})"
        ),
        rf"\1\2{REDACTED}",
    ),
)


def scrub(text: str, *, shapes: bool = True) -> str:
    """`text` with every registered key value, and (unless `shapes` is False) anything
    shaped like a key, replaced by REDACTED.

    Whole documents (a report, a context) are scrubbed of known values only: a prompt
    or an output may talk about tokens, and only an error message is rewritten freely.
    """
    if not text:
        return text
    known = _known_values()
    if known is not None:
        text = known.sub(REDACTED, text)
    if shapes:
        for pattern, replacement in _SHAPES:
            text = pattern.sub(replacement, text)
    return text


def scrub_optional(text: str | None) -> str | None:
    return None if text is None else scrub(text)


# -- values shown to the user ------------------------------------------------------------

MASK = "***"
# The password of a URL's user part: http://user:PASSWORD@host -> http://user:***@host
_URL_PASSWORD = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^/\s:@'\"]*:)[^/\s@'\"]*@")


def mask_url(text: str) -> str:
    """`text` with the password of every URL in it replaced by `***`."""
    return _URL_PASSWORD.sub(rf"\1{MASK}@", text)


def shown(value: Any) -> str:
    """An option value as a line shows it: `repr`, but a secret-named entry of a mapping
    as `***` (`{api_key: ***, temperature: 0}`), a URL's password masked and every known
    key value blanked."""
    if isinstance(value, Mapping):
        items = (
            f"{k}: {MASK if is_secret_key(str(k)) and v not in (None, '') else shown(v)}"
            for k, v in value.items()
        )
        return "{" + ", ".join(items) + "}"
    return mask_url(scrub(repr(value), shapes=False))


def scrub_data(value: Any) -> Any:
    """A copy of `value` (JSON-like data) with every registered key value blanked in
    its strings, keys included: what the response cache stores."""
    if isinstance(value, str):
        return scrub(value, shapes=False)
    if isinstance(value, dict):
        return {scrub_data(k): scrub_data(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [scrub_data(v) for v in value]
    return value
