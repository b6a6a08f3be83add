"""One call to a backend, as the gateway makes it: the structured-output mode stepped
down when a server refuses it (HTTP 400), and transient failures retried with backoff
(honouring Retry-After) inside the model's concurrency slot."""

from __future__ import annotations

import asyncio
from typing import Protocol

from promptgen.llm.backend import Backend
from promptgen.llm.batcher import Attempt
from promptgen.llm.limits import Limits
from promptgen.llm.replies import RetryPolicy, with_schema
from promptgen.llm.types import CallError, ChatRequest, RawReply
from promptgen.results import Usage

# Structured-output modes, strongest first; a server that refuses one gets the next.
MODES = ("json_schema", "json_object", "prompt")


class Gateway(Protocol):
    """What a call needs from the gateway (`LLM`): the concurrency slots, how many calls
    a backend may have in flight, the retry policy, and where a model's structured-output
    mode is kept once a server refused a stronger one."""

    limits: Limits
    retry: RetryPolicy

    def concurrency_for(self, backend: Backend) -> int: ...

    def step_down(self, model_id: str, mode: str) -> None: ...


async def negotiate(
    llm: Gateway, backend: Backend, model_id: str, request: ChatRequest, mode: str
) -> Attempt:
    """Call; if the server refuses the structured-output mode (HTTP 400), step down."""
    total_attempts = 0
    while True:
        sent = request
        if mode in ("json_object", "prompt", "grammar") and request.json_schema is not None:
            sent = ChatRequest(
                **{**request.__dict__, "messages": with_schema(request)},
            )
        reply, attempts, err = await call_with_retries(llm, backend, model_id, sent, mode)
        total_attempts += attempts
        if reply is not None:
            usage = Usage(
                prompt_tokens=reply.prompt_tokens,
                completion_tokens=reply.completion_tokens,
                cost=reply.cost or 0.0,
                calls=1,
            )
            return reply, usage, total_attempts, None
        assert err is not None
        if err.status == 400 and mode in MODES[:-1]:
            mode = MODES[MODES.index(mode) + 1]
            llm.step_down(model_id, mode)
            continue
        where = f"HTTP {err.status}, " if err.status else ""
        message = f"{model_id}: {err.message} ({where}{total_attempts} attempt(s))"
        return None, Usage(calls=1), total_attempts, message


async def call_with_retries(
    llm: Gateway, backend: Backend, model_id: str, request: ChatRequest, mode: str
) -> tuple[RawReply | None, int, CallError | None]:
    limit = llm.concurrency_for(backend)
    cancellable = backend.policy.cancellable
    attempt = 0
    while True:
        attempt += 1
        async with llm.limits.slot(model_id, limit) as limiter:
            try:
                call = backend.chat(request, mode)
                # A call that cannot be cancelled is bounded by max_tokens instead.
                timeout = request.timeout + 5
                reply = await (asyncio.wait_for(call, timeout) if cancellable else call)
                limiter.succeeded()
                return reply, attempt, None
            except TimeoutError:
                error = CallError(f"timed out after {request.timeout:g}s", retryable=True)
            except CallError as err:
                error = err
                if err.rate_limited:
                    limiter.rate_limited()
        if not error.retryable or attempt >= llm.retry.max_attempts:
            return None, attempt, error
        await asyncio.sleep(llm.retry.delay(attempt, error.retry_after))
