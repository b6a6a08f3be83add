"""What the backends, the HTTP transport and the Batch API share, and import from here
(this module imports none of them): a provider's chat-completion JSON read into a
RawReply (`chat_reply`), its failures as CallErrors the retry loop understands
(`classify`, `parse_retry_after`), and litellm, loaded when first needed."""

from __future__ import annotations

import contextlib
import email.utils
import json
import os
import re
import time
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from promptgen.llm.adaptive import RateHeaders
from promptgen.llm.types import CallError, RawReply
from promptgen.secrets import scrub

# litellm fetches a price map from the network at import unless told not to.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

_NO_RETRY = {400, 401, 403, 404, 413, 422}


def load_litellm() -> Any:
    import litellm

    litellm.telemetry = False
    litellm.suppress_debug_info = True
    litellm.drop_params = True  # a provider without json mode still gets the schema in the prompt
    return litellm


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value)
        return max(0.0, parsed.timestamp() - time.time()) if parsed else None


def rate_headers(headers: Mapping[str, str]) -> RateHeaders | None:
    """The provider's request budget from a reply's headers (lower-case names), as
    OpenAI and Azure OpenAI send them, or litellm passes them on (the provider's own
    under `llm_provider-`, Anthropic's mapped to these names); None when absent."""
    limit = _count(_header(headers, "x-ratelimit-limit-requests"))
    remaining = _count(_header(headers, "x-ratelimit-remaining-requests"))
    if limit is None and remaining is None:
        return None
    reset = _header(headers, "x-ratelimit-reset-requests", "anthropic-ratelimit-requests-reset")
    return RateHeaders(limit=limit, remaining=remaining, reset=parse_reset(reset))


def _header(headers: Mapping[str, str], *names: str) -> str | None:
    for name in names:
        for key in (name, f"llm_provider-{name}"):
            if key in headers:
                return headers[key]
    return None


def _count(value: str | None) -> int | None:
    try:
        return int(float(value)) if value is not None else None
    except ValueError:
        return None


_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")


def parse_reset(value: str | None) -> float | None:
    """Seconds from a reset header: a duration as OpenAI writes it ("1s", "6m0s",
    "20ms"), plain seconds, or a date (RFC 3339, as Anthropic sends it); None if
    unreadable."""
    text = (value or "").strip()
    parts = _DURATION.findall(text)
    if parts and "".join(n + u for n, u in parts) == text:
        return sum(float(n) * _UNITS[u] for n, u in parts)
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return max(0.0, when.timestamp() - time.time()) if when.tzinfo else None


def _headers(exc: Exception) -> dict[str, str]:
    for attr in ("litellm_response_headers", "headers"):
        headers = getattr(exc, attr, None)
        if headers:
            return {str(k).lower(): str(v) for k, v in dict(headers).items()}
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    return {str(k).lower(): str(v) for k, v in dict(headers or {}).items()}


def classify(exc: Exception) -> CallError:
    """Map a litellm/openai/httpx exception to a CallError the retry loop understands."""
    status = getattr(exc, "status_code", None)
    status = status if isinstance(status, int) else None
    name = type(exc).__name__
    # Scrubbed before it is cut: a key cut in half would no longer be recognised.
    full = scrub(str(exc))
    message = full.splitlines()[0][:300] if full.strip() else name
    retry_after = parse_retry_after(_headers(exc).get("retry-after"))
    if "Timeout" in name:
        return CallError(f"timed out: {message}", status=status, retryable=True)
    if status == 429:
        return CallError(
            message, status=429, retryable=True, retry_after=retry_after, rate_limited=True
        )
    if status is not None and status >= 500:  # 503: overloaded, lowers the limit as 429 does
        return CallError(
            message,
            status=status,
            retryable=True,
            retry_after=retry_after,
            rate_limited=status == 503,
        )
    if status in _NO_RETRY:
        return CallError(message, status=status, retryable=False)
    connection = "Connection" in name or "APIError" in name or status is None
    return CallError(message, status=status, retryable=connection, retry_after=retry_after)


def chat_reply(data: Any) -> RawReply:
    """The fields promptgen uses, read from the chat-completion JSON."""
    choices = data.get("choices") if isinstance(data, dict) else None
    if not choices or not isinstance(choices[0], dict):
        raise CallError("the server's answer has no choices", retryable=True)
    # Several choices (a request with `n`) in the server's index order.
    ordered = sorted(
        (c for c in choices if isinstance(c, dict)), key=lambda c: _index(c.get("index"))
    )
    replies = [
        RawReply(text=message_text(c.get("message") or {}), finish_reason=c.get("finish_reason"))
        for c in ordered
    ]
    usage = data.get("usage") or {}
    return RawReply(
        text=replies[0].text,
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=int(usage.get("completion_tokens") or 0),
        cached_tokens=cached_tokens(usage),
        cost=None,
        model=data.get("model"),
        finish_reason=replies[0].finish_reason,
        choices=replies if len(replies) > 1 else [],
    )


def cached_tokens(usage: Any) -> int:
    """Prompt tokens the provider reused from its cache, as OpenAI reports them
    (`usage.prompt_tokens_details.cached_tokens`; a JSON object or litellm's); 0 when
    not said."""
    details = _field(usage, "prompt_tokens_details")
    value = _field(details, "cached_tokens") if details is not None else None
    return value if isinstance(value, int) and value > 0 else 0


def _index(value: Any) -> int:
    return value if isinstance(value, int) else 0


def message_text(message: Any) -> str:
    """An answer's text (a JSON message, or litellm's object): its content, then the tool
    calls it makes, as the JSON text `{"tool_calls": [{"name": ..., "arguments": {...}}]}`
    (a model given tools may answer with calls instead of text; the calls' ids are left
    out, their arguments read as JSON where they are)."""
    content = _field(message, "content")
    text = content if isinstance(content, str) else ""
    calls = [_tool_call(c) for c in _field(message, "tool_calls") or []]
    if not calls:
        return text
    said = json.dumps({"tool_calls": calls}, ensure_ascii=False)
    return f"{text}\n\n{said}" if text.strip() else said


def _field(value: Any, name: str) -> Any:
    return value.get(name) if isinstance(value, dict) else getattr(value, name, None)


def _tool_call(call: Any) -> dict[str, Any]:
    """One tool call as the output says it: the function's name and arguments (a custom
    tool's name and input)."""
    function = _field(call, "function")
    if function is None:
        custom = _field(call, "custom")
        return {"name": _field(custom, "name"), "input": _field(custom, "input")}
    arguments = _field(function, "arguments")
    if isinstance(arguments, str):
        with contextlib.suppress(ValueError):  # else kept as the model wrote it
            arguments = json.loads(arguments)
    return {"name": _field(function, "name"), "arguments": arguments}
