"""Several answers to one call at once (`LLM.complete_choices`).

Candidate k is the answer the same call with `variant=k` gets: its cache key is that
call's key, so a candidate asked in one request with `n` and a candidate asked on its
own are the same entry, and a re-run reads every one back without a call. The missing
candidates are asked in one request with `n` where the backend takes it; what a server
leaves out (it ignores `n`, or refuses it) is asked as separate concurrent calls, each
with its own variant.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from promptgen.llm import structured
from promptgen.llm.backend import Backend
from promptgen.llm.replies import parse, text_completion
from promptgen.llm.types import Call, Completion, RawReply
from promptgen.results import Usage

if TYPE_CHECKING:
    from promptgen.llm.client import LLM


def answer_requests(kind: type[Backend], model: str, n: int) -> int:
    """Requests that `n` candidates from `model` (the backend's name) take when none is
    cached: one with `n` where the backend takes it, else one each."""
    return min(n, 1) if kind.many_choices(model) else n


async def complete_choices(llm: LLM, call: Call, variants: Sequence[int]) -> list[Completion]:
    """One Completion per variant, in the order given."""
    call, model_id, backend, name, spec = llm._prepare(call)
    keys = [call.key(model_id, llm._api_base(backend), spec, v) for v in variants]
    found = [llm._from_cache(k, model_id, spec, call.stage) for k in keys]
    missing = [i for i, hit in enumerate(found) if hit is None]
    if len(missing) > 1 and _at_once(llm, backend, model_id, name):
        first = variants[missing[0]]
        answers = await _one_request(llm, backend, model_id, name, call, spec, first, len(missing))
        for i, answer in zip(missing, answers, strict=False):
            if answer is None:
                continue
            found[i] = answer
            if answer.ok and answer.text is not None and llm.cache is not None:
                llm.cache.set(keys[i], {"text": answer.text, **answer.usage.model_dump()})
    rest = [i for i, hit in enumerate(found) if hit is None]
    alone = await asyncio.gather(*(_single(llm, call, variants[i]) for i in rest))
    for i, answer in zip(rest, alone, strict=True):
        found[i] = answer
    return [answer for answer in found if answer is not None]


def _at_once(llm: LLM, backend: Backend, model_id: str, name: str) -> bool:
    if model_id in llm._one_choice or llm._batch_api(backend, name) is not None:
        return False
    return type(backend).many_choices(name)


async def _single(llm: LLM, call: Call, variant: int) -> Completion:
    return await llm.complete(
        call.messages,
        model=call.model,
        output=call.output,
        temperature=call.temperature,
        max_tokens=call.max_tokens,
        seed=call.seed,
        variant=variant,
        stage=call.stage,
        params=call.params,
    )


async def _one_request(
    llm: LLM,
    backend: Backend,
    model_id: str,
    name: str,
    call: Call,
    spec: structured.OutputSpec | None,
    variant: int,
    n: int,
) -> list[Completion | None]:
    """Up to `n` candidates from one request (sent as the call of `variant` would be, with
    `n`). A choice whose structured answer does not parse is left out: asked on its own,
    it gets the gateway's repair turn. A server that refuses `n` is not asked with it again."""
    request = call.request(name, spec, llm.settings.timeout, variant, n=n)
    mode = llm._mode(backend, model_id, request)
    started = time.perf_counter()
    reply, usage, attempts, error = await llm._call_negotiating(backend, model_id, request, mode)
    llm._spent(model_id, call.stage, usage, started)
    if reply is None:
        if error and "HTTP 400" in error:  # the server does not take `n`
            llm._one_choice.add(model_id)
            return []
        failed: Completion[Any] = Completion(
            text=None, model=model_id, usage=usage, attempts=attempts, error=error
        )
        return [failed, *[replace(failed, usage=Usage()) for _ in range(n - 1)]]
    choices = (reply.choices or [reply])[:n]
    shares = split_usage(usage, len(choices))
    answers = [
        _answer(choice, share, model_id, spec, attempts)
        for choice, share in zip(choices, shares, strict=True)
    ]
    for answer in answers:
        if answer is not None:
            answer.latency_ms = usage.latency_ms
    return answers


def _answer(
    choice: RawReply,
    usage: Usage,
    model_id: str,
    spec: structured.OutputSpec | None,
    attempts: int,
) -> Completion | None:
    if spec is None:
        return text_completion(choice, model_id, usage, attempts)
    if choice.fault is not None:  # empty or cut off: a failed candidate, never repaired
        return text_completion(choice, model_id, usage, attempts)
    parsed, problem = parse(spec, choice)
    if problem is not None:
        return None
    return Completion(
        text=choice.text,
        model=model_id,
        parsed=parsed,
        usage=usage,
        attempts=attempts,
        finish_reason=choice.finish_reason,
    )


def split_usage(usage: Usage, n: int) -> list[Usage]:
    """A request's usage shared among its `n` choices so the shares add up to it: the
    prompt (read once) and the call go to the first; completion tokens and cost are
    shared evenly (a provider reports them for the request, not per choice)."""
    n = max(1, n)
    tokens, extra = divmod(usage.completion_tokens, n)
    return [
        Usage(
            prompt_tokens=usage.prompt_tokens if i == 0 else 0,
            completion_tokens=tokens + (extra if i == 0 else 0),
            cost=usage.cost / n,
            calls=usage.calls if i == 0 else 0,
            latency_ms=usage.latency_ms if i == 0 else 0.0,
        )
        for i in range(n)
    ]
