"""A provider's Batch API (OpenAI's Files + Batches endpoints) through the openai SDK.

What goes over the wire: requests written as JSONL (one chat-completion request a line,
each with a `custom_id`), uploaded with `purpose=batch`, submitted as a batch on
`/v1/chat/completions` with a 24 h completion window, polled until it ends, and its
output and error files read back line by line. Splitting by the provider's size
limits and pricing at batch rates are here too; the queue that gathers calls into
batches is `promptgen.llm.batcher` (docs/scale.md).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from promptgen.errors import BadInputError
from promptgen.llm.types import CallError, ChatRequest, RawReply
from promptgen.llm.wire import chat_reply, classify, load_litellm

ENDPOINT = "/v1/chat/completions"
WINDOW = "24h"
# A batch that ended: its files hold every answer it will give.
ENDED = ("completed", "failed", "expired", "cancelled")
# The discount when the price map has no batch rate (OpenAI: half the normal price).
BATCH_DISCOUNT = 0.5

# The unit of work a call belongs to (a cell, a verdict): set by the stages that may be
# batched, it is both the opt-in and the custom_id of the call's line.
_LABEL: ContextVar[str | None] = ContextVar("promptgen_batch_label", default=None)


@contextmanager
def batched(label: str) -> Iterator[None]:
    """Calls made inside (and in tasks started inside) may go into a provider batch
    under `label`, when --batch is on and the model's backend has a Batch API."""
    token = _LABEL.set(label)
    try:
        yield
    finally:
        _LABEL.reset(token)


def current_label() -> str | None:
    return _LABEL.get()


@dataclass(frozen=True)
class BatchLimits:
    """The provider's limits and how patiently to wait. The environment can set each
    (PROMPTGEN_BATCH_MAX_REQUESTS, ..._MAX_BYTES, ..._POLL, ..._MAX_POLL, ..._MAX_WAIT,
    ..._RETRIES), e.g. for a provider with smaller batches."""

    max_requests: int = 50_000
    max_bytes: int = 200 * 1024 * 1024
    poll: float = 10.0  # first wait between polls, in seconds; grows by half each time
    max_poll: float = 300.0
    max_wait: float = 25 * 3600.0  # the 24 h window and some slack
    retries: int = 2  # new, smaller batches for the lines that failed
    gather: float = 0.2  # quiet time before the calls gathered so far are submitted

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> BatchLimits:
        values: dict[str, Any] = {}
        for name, kind in (
            ("max_requests", int),
            ("max_bytes", int),
            ("poll", float),
            ("max_poll", float),
            ("max_wait", float),
            ("retries", int),
            ("gather", float),
        ):
            variable = f"PROMPTGEN_BATCH_{name.upper()}"
            raw = env.get(variable)
            if raw is None:
                continue
            try:
                value = kind(raw)
            except ValueError:
                value = -1
            if value < (1 if name in ("max_requests", "max_bytes") else 0):
                raise BadInputError(
                    f"{variable}={raw!r} is not a valid number",
                    hint="give a positive number or unset it",
                )
            values[name] = value
        return cls(**values)


def request_line(custom_id: str, request: ChatRequest, mode: str) -> bytes:
    """One JSONL line: the chat-completion body the normal call would send."""
    body = request.openai_params(mode)
    body.pop("timeout", None)
    # Per-call headers cannot travel in a batch file; the batch runs under the client's key.
    body.pop("extra_headers", None)
    body.pop("api_key", None)
    body["model"] = str(body["model"]).removeprefix("openai/")
    line = {"custom_id": custom_id, "method": "POST", "url": ENDPOINT, "body": body}
    return json.dumps(line, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def split(lines: list[tuple[str, bytes]], limits: BatchLimits) -> list[list[tuple[str, bytes]]]:
    """Lines in batches of at most `max_requests` lines and `max_bytes` bytes (a line
    larger than the byte limit alone goes in a batch of its own; the provider says no)."""
    chunks: list[list[tuple[str, bytes]]] = []
    current: list[tuple[str, bytes]] = []
    size = 0
    for item in lines:
        length = len(item[1])
        if current and (len(current) >= limits.max_requests or size + length > limits.max_bytes):
            chunks.append(current)
            current, size = [], 0
        current.append(item)
        size += length
    if current:
        chunks.append(current)
    return chunks


@dataclass(frozen=True)
class BatchState:
    status: str
    output_file_id: str | None
    error_file_id: str | None


class BatchAPI:
    """The Files and Batches endpoints of one OpenAI-compatible client."""

    def __init__(self, client: Any) -> None:
        self._client = client

    async def submit(self, lines: list[bytes], model: str) -> tuple[str, str]:
        """Upload the lines and start a batch on them: (input file id, batch id)."""
        try:
            upload = await self._client.files.create(
                file=(f"promptgen-{model.replace('/', '_')}.jsonl", b"".join(lines)),
                purpose="batch",
            )
            batch = await self._client.batches.create(
                input_file_id=upload.id,
                endpoint=ENDPOINT,
                completion_window=WINDOW,
                metadata={"source": "promptgen"},
            )
        except Exception as exc:
            raise classify(exc) from exc
        return upload.id, batch.id

    async def state(self, batch_id: str) -> BatchState:
        try:
            batch = await self._client.batches.retrieve(batch_id)
        except Exception as exc:
            raise classify(exc) from exc
        return BatchState(batch.status, batch.output_file_id, batch.error_file_id)

    async def lines(self, file_id: str | None) -> list[dict[str, Any]]:
        """The JSON lines of an output or error file (none when there is no file)."""
        if not file_id:
            return []
        try:
            content = await self._client.files.content(file_id)
        except Exception as exc:
            raise classify(exc) from exc
        found = []
        for raw in content.text.splitlines():
            if raw.strip():
                try:
                    found.append(json.loads(raw))
                except json.JSONDecodeError:
                    continue  # a broken line counts as a missing answer: asked again
        return found


def read_line(line: dict[str, Any]) -> tuple[str, RawReply | CallError]:
    """An output- or error-file line: its custom_id and the reply or why there is none."""
    custom_id = str(line.get("custom_id", ""))
    response = line.get("response") or {}
    error = line.get("error")
    status = response.get("status_code")
    body = response.get("body")
    if not error and status == 200 and isinstance(body, dict):
        try:
            return custom_id, chat_reply(body)
        except CallError as err:
            return custom_id, err
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        error = error or body["error"]
    message = str((error or {}).get("message") or f"HTTP {status}")
    code = (error or {}).get("code")
    text = f"batch line failed: {message}" + (f" ({code})" if code else "")
    return custom_id, CallError(text, status=status if isinstance(status, int) else None)


def batch_price(model: str, prompt_tokens: int, completion_tokens: int) -> float:
    """What the tokens cost at the provider's batch rate: the price map's batch rates
    where it has them, else BATCH_DISCOUNT of the normal price; 0 for a model it does
    not know (a local server's)."""
    litellm = load_litellm()
    name = model.split("/", 1)[1] if model.startswith("openai/") else model
    info = litellm.model_cost.get(name) or litellm.model_cost.get(model) or {}
    batch_in = info.get("input_cost_per_token_batches")
    batch_out = info.get("output_cost_per_token_batches")
    if batch_in is not None and batch_out is not None:
        return float(prompt_tokens * batch_in + completion_tokens * batch_out)
    try:
        normal = litellm.cost_per_token(
            model=model, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens
        )
    except Exception:
        return 0.0
    return float(sum(normal)) * BATCH_DISCOUNT
