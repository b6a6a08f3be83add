"""One call to a backend, as the gateway makes it: the structured-output mode stepped
down when a server refuses it (HTTP 400; kept for that schema on that model, see
llm/refusals.py), transient failures retried with backoff
(honouring Retry-After) inside the model's concurrency slot, and a faulty reply (empty
or cut off) asked again as the same request (`RetryPolicy.fault_retries`)."""

from __future__ import annotations

import asyncio
from typing import Protocol

from promptgen.llm.backend import Backend
from promptgen.llm.batcher import Attempt
from promptgen.llm.limits import Bounds, Limits
from promptgen.llm.refusals import MODES
from promptgen.llm.replies import RetryPolicy, faulty, mended, with_schema
from promptgen.llm.types import CallError, ChatRequest, RawReply
from promptgen.results import Usage


class Gateway(Protocol):
    """What a call needs from the gateway (`LLM`): the concurrency slots, how many calls
    a backend may have in flight, the retry policy, and where a schema's structured-output
    mode on a model is kept once a server refused a stronger one."""

    limits: Limits
    retry: RetryPolicy

    def concurrency_for(self, backend: Backend, model_id: str = "") -> Bounds: ...

    def schema_refused(
        self, model_id: str, request: ChatRequest, refusals: list[tuple[str, str]], mode: str
    ) -> None: ...


async def negotiate(
    llm: Gateway, backend: Backend, model_id: str, request: ChatRequest, mode: str
) -> Attempt:
    """Call; if the server refuses the structured-output mode (HTTP 400), step down; a
    faulty reply is asked again (`again_if_faulty`)."""
    first, mode = await _negotiate(llm, backend, model_id, request, mode)
    return await again_if_faulty(llm, backend, model_id, request, mode, first)


async def again_if_faulty(
    llm: Gateway, backend: Backend, model_id: str, request: ChatRequest, mode: str, first: Attempt
) -> Attempt:
    """A reply that is empty or cut off (any of its choices) is a transient fault: the same
    request is asked again, up to `fault_retries` times, so a deterministic server answers
    as it would have without the fault. What the last ask left faulty stays so (the caller
    repairs it, keeps it or records the fault); a retry that fails keeps the faulty reply.
    Every ask counts in the usage and the attempts. A deterministic backend (the embedded
    model) is not asked again: it would repeat the fault."""
    reply, usage, attempts, error = first
    retries = 0 if backend.policy.deterministic else llm.retry.fault_retries
    for _ in range(retries):
        if reply is None or not faulty(reply):
            break
        (again, more, tries, _failed), mode = await _negotiate(
            llm, backend, model_id, request, mode
        )
        usage, attempts = usage + more, attempts + tries
        if again is not None:
            reply = mended(reply, again)
    return reply, usage, attempts, error


async def _negotiate(
    llm: Gateway, backend: Backend, model_id: str, request: ChatRequest, mode: str
) -> tuple[Attempt, str]:
    """One ask, stepping down the structured-output mode; the mode it ended in. A mode
    counts as refused once a weaker one is answered: a 400 every mode gets (a context too
    long, a parameter the server does not take) is the call's error, no refusal."""
    total_attempts = 0
    refusals: list[tuple[str, str]] = []  # (mode, the server's message)
    while True:
        sent = request
        if mode in ("json_object", "prompt", "grammar") and request.json_schema is not None:
            sent = ChatRequest(
                **{**request.__dict__, "messages": with_schema(request)},
            )
        reply, attempts, err = await call_with_retries(llm, backend, model_id, sent, mode)
        total_attempts += attempts
        if reply is not None:
            if refusals:  # under --strict-output this raises (SchemaRefusedError)
                llm.schema_refused(model_id, request, refusals, mode)
            usage = Usage(
                prompt_tokens=reply.prompt_tokens,
                completion_tokens=reply.completion_tokens,
                cached_tokens=reply.cached_tokens,
                cost=reply.cost or 0.0,
                calls=1,
            )
            return (reply, usage, total_attempts, None), mode
        assert err is not None
        if err.status == 400 and mode in MODES[:-1]:
            refusals.append((mode, err.message))
            mode = MODES[MODES.index(mode) + 1]
            continue
        where = f"HTTP {err.status}, " if err.status else ""
        message = f"{model_id}: {err.message} ({where}{total_attempts} attempt(s))"
        return (None, Usage(calls=1), total_attempts, message), mode


async def call_with_retries(
    llm: Gateway, backend: Backend, model_id: str, request: ChatRequest, mode: str
) -> tuple[RawReply | None, int, CallError | None]:
    bounds = llm.concurrency_for(backend, model_id)
    cancellable = backend.policy.cancellable
    attempt = 0
    while True:
        attempt += 1
        async with llm.limits.slot(model_id, bounds) as slot:
            try:
                call = backend.chat(request, mode)
                # A call that cannot be cancelled is bounded by max_tokens instead.
                timeout = request.timeout + 5
                reply = await (asyncio.wait_for(call, timeout) if cancellable else call)
                slot.succeeded(reply.rate)
                return reply, attempt, None
            except TimeoutError:
                error = CallError(f"timed out after {request.timeout:g}s", retryable=True)
            except CallError as err:
                error = err
                if err.rate_limited:
                    slot.rate_limited()
        if not error.retryable or attempt >= llm.retry.max_attempts:
            return None, attempt, error
        await asyncio.sleep(llm.retry.delay(attempt, error.retry_after))
