"""`LLM.complete_choices`: several answers to one call in one request with `n` (through
the openai SDK and through litellm), each cached as the same call with its variant."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from promptgen.llm import LLM
from promptgen.llm.choices import split_usage
from promptgen.results import Usage
from tests.conftest import run
from tests.fakellm import FakeLLM, Reply

HI = [{"role": "user", "content": "Say hi"}]


class Pick(BaseModel):
    label: str


def answers(body: dict[str, Any]) -> Reply:
    """n choices `a<seed+k>`; 30 completion tokens for the whole request."""
    first = int(body.get("seed") or 0)
    n = int(body.get("n") or 1)
    return Reply(
        choices=[f"a{first + k}" for k in range(n)], prompt_tokens=12, completion_tokens=30
    )


def test_one_request_then_every_choice_from_the_cache(fake_llm: FakeLLM, gateway: LLM) -> None:
    fake_llm.responder = answers
    got = run(gateway.complete_choices(HI, variants=[0, 1, 2], stage="gt"))
    assert [c.text for c in got] == ["a0", "a1", "a2"]
    assert len(fake_llm.requests) == 1 and fake_llm.requests[0]["n"] == 3
    # Usage counted once, shared so the candidates add up to it.
    assert [(c.usage.prompt_tokens, c.usage.completion_tokens) for c in got] == [
        (12, 10),
        (0, 10),
        (0, 10),
    ]
    total = gateway.usage.totals.by_stage["gt"]
    assert (total.calls, total.prompt_tokens, total.completion_tokens) == (1, 12, 30)
    # Candidate 1 is the plain call with variant 1: the same cache entry.
    fake_llm.reset()
    alone = run(gateway.complete(HI, variant=1))
    again = run(gateway.complete_choices(HI, variants=[0, 1, 2]))
    assert (alone.text, alone.cached) == ("a1", True)
    assert [c.text for c in again] == ["a0", "a1", "a2"] and all(c.cached for c in again)
    assert fake_llm.requests == []


def test_only_the_missing_variants_are_asked(fake_llm: FakeLLM, gateway: LLM) -> None:
    fake_llm.responder = answers
    run(gateway.complete(HI, variant=0))
    fake_llm.reset()
    got = run(gateway.complete_choices(HI, variants=[0, 1, 2]))
    assert [c.text for c in got] == ["a0", "a1", "a2"]
    ((seed, n),) = [(b.get("seed"), b.get("n")) for b in fake_llm.requests]
    assert (seed, n) == (1, 2)  # sent as variant 1 would be, with n=2


def test_structured_choices_are_parsed_and_a_bad_one_asked_alone(
    fake_llm: FakeLLM, gateway: LLM
) -> None:
    def reply(body: dict[str, Any]) -> Reply:
        if body.get("n") == 2:
            return Reply(choices=[json.dumps({"label": "x"}), "not json"])
        return Reply(content=json.dumps({"label": f"alone {body.get('seed')}"}))

    fake_llm.responder = reply
    got = run(gateway.complete_choices(HI, variants=[0, 1], output=Pick))
    assert [c.parsed for c in got] == [Pick(label="x"), Pick(label="alone 1")]
    assert [b.get("n") for b in fake_llm.requests] == [2, None]


def test_a_server_refusing_n_is_asked_one_call_each(fake_llm: FakeLLM, tmp_path: Path) -> None:
    from tests.llm.test_gateway import make

    llm = make(fake_llm, tmp_path, cache=False)

    def reply(body: dict[str, Any]) -> Reply:
        if "n" in body:
            return Reply(status=400)
        return Reply(content=f"one {body.get('seed')}")

    fake_llm.responder = reply
    got = run(llm.complete_choices(HI, variants=[0, 1, 2], model="rules"))
    assert [c.text for c in got] == ["one None", "one 1", "one 2"]
    fake_llm.reset()
    run(llm.complete_choices(HI, variants=[0, 1], model="rules"))
    assert all("n" not in b for b in fake_llm.requests)  # not asked with `n` again


def test_a_failed_request_fails_every_missing_candidate(fake_llm: FakeLLM, gateway: LLM) -> None:
    fake_llm.responder = lambda body: Reply(status=401)
    got = run(gateway.complete_choices(HI, variants=[0, 1]))
    assert [c.ok for c in got] == [False, False] and len(fake_llm.requests) == 1
    assert "HTTP 401" in (got[0].error or "")
    assert [c.usage.calls for c in got] == [1, 0]


def test_split_usage_adds_up() -> None:
    usage = Usage(prompt_tokens=7, completion_tokens=10, cost=0.3, calls=1)
    shares = split_usage(usage, 3)
    assert [s.completion_tokens for s in shares] == [4, 3, 3]
    total = shares[0] + shares[1] + shares[2]
    assert (total.prompt_tokens, total.completion_tokens, total.calls) == (7, 10, 1)
    assert abs(total.cost - 0.3) < 1e-12
