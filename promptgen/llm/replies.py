"""What the gateway does with one reply, and how long it waits before a retry: pure
functions of their arguments, kept apart from the gateway's state (client.py)."""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from typing import Any

from promptgen.llm import structured
from promptgen.llm.types import FAULT_TEXT, ChatRequest, Completion, RawReply
from promptgen.results import Usage
from promptgen.secrets import REDACTED

# How many times a faulty reply (empty, or cut off at the token limit) is asked again as
# the same request before it counts: a fault is transient, and the same request gets the
# answer a deterministic server would have given without it (docs/llm.md).
FAULT_RETRIES = 1


@dataclass
class RetryPolicy:
    max_attempts: int = 4
    fault_retries: int = FAULT_RETRIES
    base_delay: float = 0.5
    max_delay: float = 20.0
    max_retry_after: float = 60.0

    def delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self.max_retry_after)
        backoff = min(self.max_delay, self.base_delay * 2 ** (attempt - 1))
        return backoff * (0.5 + random.random() / 2)  # full jitter on the upper half


def text_completion(reply: RawReply, model_id: str, usage: Usage, attempts: int) -> Completion:
    """A plain-text answer; an empty or cut-off one is a failure that keeps its text."""
    fault = reply.fault
    return Completion(
        text=reply.text,
        model=model_id,
        usage=usage,
        attempts=attempts,
        error=f"{model_id}: {FAULT_TEXT[fault]}" if fault else None,
        finish_reason=reply.finish_reason,
        fault=fault,
    )


def faulty(reply: RawReply) -> bool:
    """Whether the reply, or any of its choices (a request with `n`), is not a whole answer."""
    return reply.fault is not None or any(c.fault is not None for c in reply.choices)


def mended(first: RawReply, again: RawReply) -> RawReply:
    """The reply of the same request asked again after `first` was faulty: with several
    choices, each is `first`'s where that one was whole, `again`'s otherwise."""
    if not first.choices or not again.choices:
        return again
    kept = [
        old if old.fault is None or i >= len(again.choices) else again.choices[i]
        for i, old in enumerate(first.choices)
    ]
    return replace(again, text=kept[0].text, finish_reason=kept[0].finish_reason, choices=kept)


def parse(spec: structured.OutputSpec, reply: RawReply) -> tuple[Any, str | None]:
    """A structured answer cut off at the token limit is never accepted, even when what
    came back happens to parse: it goes to the repair turn like any invalid answer."""
    if reply.finish_reason == "length":
        return None, "the answer was cut off at the token limit; answer again, more briefly"
    return spec.parse(reply.text)


def without_redacted(params: dict[str, Any]) -> dict[str, Any]:
    """Call parameters without values blanked when a context was saved (an `api_key`
    from a resumed context.json): the provider's own key is used instead."""

    def keep(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: keep(v) for k, v in value.items() if v != REDACTED}
        return value

    return keep(params)


def with_schema(request: ChatRequest) -> list[dict[str, Any]]:
    """The messages with the schema stated in the system message."""
    assert request.json_schema is not None
    note = structured.schema_instructions(request.json_schema)
    messages = [dict(m) for m in request.messages]
    if messages and messages[0].get("role") == "system":
        messages[0]["content"] = f"{messages[0]['content']}\n\n{note}"
    else:
        messages.insert(0, {"role": "system", "content": note})
    return messages
