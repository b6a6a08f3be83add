"""Several answers to one call at once (`LLM.complete_choices`).

Candidate k is the answer the same call with `variant=k` gets: its cache key is that
call's key, so a candidate asked in one request with `n` and a candidate asked on its
own are the same entry, and a re-run reads every one back without a call. The missing
candidates are asked in one request with `n` where the backend takes it; what a server
leaves out (it ignores `n`, or refuses it) is asked as separate concurrent calls, each
with its own variant. The gateway (client.py) makes the calls; what is here needs nothing
of it: a request's choices read into candidates, and the requests a plan counts.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from promptgen.llm import structured
from promptgen.llm.backend import Backend
from promptgen.llm.replies import parse, text_completion
from promptgen.llm.types import Completion, RawReply
from promptgen.results import Usage


def answer_requests(kind: type[Backend], model: str, n: int) -> int:
    """Requests that `n` candidates from `model` (the backend's name) take when none is
    cached: one with `n` where the backend takes it, else one each."""
    return min(n, 1) if kind.many_choices(model) else n


def candidates(
    reply: RawReply | None,
    usage: Usage,
    attempts: int,
    error: str | None,
    model_id: str,
    spec: structured.OutputSpec | None,
    n: int,
) -> list[Completion | None]:
    """The `n` candidates of one request with `n` (`reply`, or None: the request failed
    with `error`, and so did each candidate). A choice whose structured answer does not
    parse is left out (None): asked on its own, it gets the gateway's repair turn."""
    if reply is None:
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
            cached_tokens=usage.cached_tokens if i == 0 else 0,
            completion_tokens=tokens + (extra if i == 0 else 0),
            cost=usage.cost / n,
            calls=usage.calls if i == 0 else 0,
            latency_ms=usage.latency_ms if i == 0 else 0.0,
        )
        for i in range(n)
    ]
