"""The adaptive per-model limit through the gateway, against a real HTTP server: it grows
past 8 while the server takes the calls, never above --concurrency, settles under a
server that refuses calls above N in flight, and honours x-ratelimit-remaining-requests
(through --api-base and through litellm)."""

from __future__ import annotations

import json
import time
import urllib.request
from pathlib import Path
from typing import Any

from promptgen.llm import LLM, RetryPolicy, bounded_gather, load_settings
from tests.conftest import OPEN_GATEWAYS, run
from tests.fakellm import FakeLLM, Reply
from tests.mockserver import mockllm

MODEL = "openai/fake"


def make(fake: FakeLLM, tmp_path: Path, attempts: int = 3, **cli: object) -> LLM:
    settings = load_settings(
        {"api_base": fake.url, "rules": MODEL, "cache": False, **cli}, env={}, cwd=tmp_path
    )
    llm = LLM(settings, retry=RetryPolicy(max_attempts=attempts, base_delay=0.01, max_delay=0.02))
    OPEN_GATEWAYS.append(llm)
    return llm


def ask(llm: LLM, n: int) -> list[Any]:
    jobs = [lambda i=i: llm.complete([{"role": "user", "content": f"q{i}"}]) for i in range(n)]
    return run(bounded_gather(jobs))


def test_the_limit_grows_past_8_while_the_server_takes_the_calls(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    fake_llm.latency = 0.2
    llm = make(fake_llm, tmp_path)
    started = time.perf_counter()
    results = ask(llm, 60)
    wall = time.perf_counter() - started
    assert all(r.ok for r in results)
    # 8 at first; their answers (8 at once) let it grow to 8 x what they showed (up to
    # 64, depending on which answers first): the other 52
    # leave in one round, two latencies in all (at a fixed 8: eight rounds, 1.6 s).
    assert fake_llm.max_in_flight > 8
    assert 0.4 <= wall < 0.8, wall
    lim = llm.limits.limiters()[MODEL]
    assert (lim.calls, lim.waits, lim.rate_limits, lim.cuts) == (60, 52, 0, 0)
    assert 52 <= lim.limit <= 8 * lim.provider.taken  # the 52 left in one round
    assert 8 < lim.provider.taken <= lim.peak_in_flight <= 60


def test_the_limit_never_exceeds_the_concurrency_flag(fake_llm: FakeLLM, tmp_path: Path) -> None:
    fake_llm.latency = 0.1
    llm = make(fake_llm, tmp_path, concurrency=20)
    assert all(r.ok for r in ask(llm, 70))
    lim = llm.limits.limiters()[MODEL]
    assert (fake_llm.max_in_flight, lim.limit, lim.peak_limit, lim.peak_in_flight) == (
        20,
        20,
        20,
        20,
    )


def test_the_limit_settles_under_a_server_that_refuses_above_n(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    fake_llm.latency = 0.05
    fake_llm.max_concurrency = 12
    llm = make(fake_llm, tmp_path, attempts=12)
    results = ask(llm, 300)
    assert all(r.ok for r in results), [r.error for r in results if not r.ok][:3]
    assert fake_llm.max_in_flight == 12 and fake_llm.capped > 0  # it probed past 12
    lim = llm.limits.limiters()[MODEL]
    assert fake_llm.capped == lim.rate_limits
    # Cut once per round of calls, then one more per limit-many successes: near 12
    # (a 13th really in flight at the server is refused and halves it again).
    assert lim.cuts >= 2 and 6 <= lim.limit <= 16, (lim.limit, lim.cuts)
    assert lim.threshold <= 13
    # Settled: the last 100 calls went out under a limit the server takes.
    late = fake_llm.capped
    assert all(r.ok for r in ask(llm, 100))
    assert fake_llm.capped - late <= 4, fake_llm.capped - late
    assert fake_llm.max_in_flight == 12


def test_under_mockllm_max_concurrency_it_settles_without_failing_a_call(tmp_path: Path) -> None:
    """The independent mock server's --max-concurrency 12 (429 with Retry-After: 0 once
    12 are in flight, over all models): the default limit probes past it, is halved back
    and every call succeeds within the default 4 attempts."""
    with mockllm("--max-concurrency", "12", "--latency", "0.05", "--retry-after", "0") as url:
        settings = load_settings(
            {"api_base": url, "rules": MODEL, "cache": False}, env={}, cwd=tmp_path
        )
        llm = LLM(settings, retry=RetryPolicy(base_delay=0.01, max_delay=0.02))
        OPEN_GATEWAYS.append(llm)
        results = ask(llm, 200)
        with urllib.request.urlopen(url.removesuffix("/v1") + "/stats", timeout=10) as reply:
            stats = json.loads(reply.read())
    assert all(r.ok for r in results), [r.error for r in results if not r.ok][:3]
    assert max(r.attempts for r in results) <= 4
    assert stats["max_in_flight"] == 12 and stats["rejected_concurrency"] > 0
    lim = llm.limits.limiters()[MODEL]
    assert lim.rate_limits == stats["rejected_concurrency"]
    # Near 12: halved at a refusal, then one more per limit-many successes (a limit
    # above 12 is refused only once 13 are really in flight at the server).
    assert 6 <= lim.limit <= 16, lim.limit


def test_a_503_halves_the_limit_as_a_429_does(fake_llm: FakeLLM, tmp_path: Path) -> None:
    llm = make(fake_llm, tmp_path, concurrency=8)
    fake_llm.queue(Reply(status=503, headers={"Retry-After": "0"}), Reply("ok"))
    result = run(llm.complete([{"role": "user", "content": "hi"}]))
    assert result.ok and result.attempts == 2
    assert llm.limits.for_model(MODEL, 8).limit == 4


def test_remaining_requests_zero_makes_calls_wait_for_the_reset(
    fake_llm: FakeLLM, gateway: LLM
) -> None:
    """Through --api-base and through litellm: every answer says the window is spent
    for 0.3 s; the calls after the first 8 wait for it, and the limit stays 8."""
    fake_llm.latency = 0.1
    arrived: list[float] = []
    spent = {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "300ms"}

    def responder(body: dict[str, Any]) -> Reply:
        arrived.append(time.perf_counter())
        return Reply("ok", headers=spent)

    fake_llm.responder = responder
    jobs = [lambda i=i: gateway.complete([{"role": "user", "content": f"q{i}"}]) for i in range(12)]
    assert all(r.ok for r in run(bounded_gather(jobs)))
    arrived.sort()
    # The 9th call left 0.1 s (the first answers) + 0.3 s (the reset) after the 8th.
    gap = arrived[8] - arrived[7]
    assert len(arrived) == 12 and 0.4 <= gap < 0.6, gap
    assert arrived[11] - arrived[8] < 0.05  # then the four at once
    lim = gateway.limits.limiters()["openai/gpt-4o-mini"]
    assert (lim.limit, lim.peak_in_flight, lim.waits) == (8, 8, 4)
