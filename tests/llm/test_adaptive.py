"""The adaptive per-model limit's arithmetic (promptgen/llm/adaptive.py), on a fake
clock and without awaiting: growth while calls wait, halving on a 429 once per epoch,
the ceiling, and the provider's x-ratelimit-*-requests headers."""

from __future__ import annotations

from pathlib import Path

import pytest

from promptgen.llm import LLM, load_settings
from promptgen.llm.adaptive import DEFAULT_RESET, AdaptiveLimiter, Provider, RateHeaders
from promptgen.llm.limits import Bounds, global_cap
from promptgen.llm.wire import parse_reset, rate_headers


class Clock:
    def __init__(self, now: float = 100.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def limiter(
    start: int = 8, ceiling: int = 256, *, waiting: int = 1000, taken: int = 10_000
) -> AdaptiveLimiter:
    provider = Provider()
    provider.taken = taken  # calls the provider has answered at once (see below)
    lim = AdaptiveLimiter(start, ceiling, provider=provider, clock=Clock())
    lim.waiting = waiting  # calls wanting a slot beyond the free ones: what growth needs
    return lim


def test_the_limit_doubles_with_each_success_while_calls_wait_up_to_the_ceiling() -> None:
    lim = limiter(8, 100)
    seen = []
    for _ in range(5):
        lim.succeeded()
        seen.append(lim.limit)
    assert seen == [16, 32, 64, 100, 100]
    assert lim.peak_limit == 100


def test_the_limit_grows_to_at_most_8x_what_the_provider_answered_at_once() -> None:
    lim = limiter(8, 512, taken=0)
    for _ in range(8):  # the first round: eight calls went out together
        lim.succeeded(depth=8)
    assert lim.limit == 64 == 8 * lim.provider.taken
    lim.succeeded(depth=20)  # one that went out with 20 in flight
    assert lim.limit == 128
    lim.succeeded(depth=40)
    assert lim.limit == 256
    # Another model of the same provider starts at 8 and grows on what it has shown.
    other = AdaptiveLimiter(8, 512, provider=lim.provider, clock=Clock())
    other.waiting = 1000
    other.succeeded(depth=3)
    assert (other.limit, other.provider.taken) == (16, 40)
    for _ in range(5):
        other.succeeded(depth=3)
    assert other.limit == 320


def test_a_call_finding_no_slot_widens_to_what_the_provider_has_taken() -> None:
    lim = limiter(8, 256, taken=0)
    lim.widen()  # the provider has answered nothing yet: the start holds
    assert lim.limit == 8
    lim.provider.taken = 5  # five calls (of this model or another) answered at once
    lim.widen()
    assert (lim.limit, lim.peak_limit) == (40, 40)
    lim.provider.taken = 100
    lim.widen()
    assert lim.limit == 256  # never above the ceiling
    capped = limiter(8, 256, taken=100)
    capped.provider_limit = 50  # x-ratelimit-limit-requests
    capped.widen()
    assert capped.limit == 50


def test_after_a_429_a_call_finding_no_slot_does_not_widen() -> None:
    lim = limiter(64, 256, taken=64)
    lim.rate_limited(lim.started()[0])
    assert lim.limit == 32
    lim.widen()
    assert lim.limit == 32


def test_a_model_new_to_the_provider_sends_its_first_wide_round_at_once() -> None:
    """The models under test's first runs, the judges' first verdicts: the provider has
    answered 15 calls of the rules model at once, so 100 calls of a new model go out
    together (8 x 15 = 120), none waiting for the first answers."""
    import asyncio

    provider = Provider()
    provider.taken = 15
    lim = AdaptiveLimiter(8, 256, provider=provider)

    async def main() -> int:
        release = asyncio.Event()

        async def call() -> None:
            async with lim.slot():
                await release.wait()

        tasks = [asyncio.create_task(call()) for _ in range(100)]
        await asyncio.sleep(0.01)
        in_flight = lim.in_flight
        release.set()
        await asyncio.gather(*tasks)
        return in_flight

    assert asyncio.run(main()) == 100
    assert lim.peak_in_flight == 100


def test_no_growth_while_no_call_waits() -> None:
    lim = limiter(8, 100, waiting=0)
    for _ in range(50):
        lim.succeeded()
    assert lim.limit == 8


def test_no_growth_while_the_free_slots_cover_the_waiting_calls() -> None:
    lim = limiter(8, 100, waiting=4)
    for _ in range(4):
        lim.started()
    lim.succeeded()  # 4 in flight, 4 free slots for the 4 waiting (woken, not yet run)
    assert lim.limit == 8
    lim.waiting = 5
    lim.succeeded()
    assert lim.limit == 16


def test_the_start_is_never_above_the_ceiling() -> None:
    assert (AdaptiveLimiter(8, 3).limit, AdaptiveLimiter(8, 3).ceiling) == (3, 3)
    fixed = limiter(1, 1)  # the embedded model: one call at a time, whatever succeeds
    fixed.succeeded()
    assert fixed.limit == 1


def test_a_429_halves_the_limit_once_per_epoch() -> None:
    lim = limiter(8, 256)
    first = [lim.started() for _ in range(8)]  # eight calls in flight, epoch 0
    assert first == [(0, n) for n in range(1, 9)]  # (epoch, calls in flight with it)
    lim.rate_limited(first[0][0])
    assert (lim.limit, lim.cuts) == (4, 1)
    for epoch, _ in first[1:]:  # the others were sent before the cut: it answered them
        lim.rate_limited(epoch)
    assert (lim.limit, lim.cuts, lim.rate_limits) == (4, 1, 8)
    later, _ = lim.started()
    assert later == 1
    lim.rate_limited(later)
    assert (lim.limit, lim.cuts) == (2, 2)
    for _ in range(3):
        lim.rate_limited(lim.started()[0])
    assert lim.limit == 1  # never below one call


def test_after_a_429_the_limit_grows_by_one_per_limit_many_successes() -> None:
    lim = limiter(32, 256)
    lim.rate_limited(lim.started()[0])
    assert (lim.limit, lim.threshold) == (16, 16)
    for _ in range(15):
        lim.succeeded()
    assert lim.limit == 16
    lim.succeeded()
    assert lim.limit == 17
    for _ in range(16):
        lim.succeeded()
    assert lim.limit == 17
    lim.succeeded()
    assert lim.limit == 18


def test_the_providers_request_limit_is_a_ceiling() -> None:
    lim = limiter(8, 256)
    lim.succeeded(RateHeaders(limit=10, remaining=9))
    assert lim.limit == 10  # 16, capped by x-ratelimit-limit-requests
    wide = limiter(8, 256)
    for _ in range(3):
        wide.succeeded()
    assert wide.limit == 64
    wide.succeeded(RateHeaders(limit=20))
    assert wide.limit == 20  # lowered at once


def test_remaining_zero_stops_growth_and_pauses_until_the_reset() -> None:
    clock = Clock(100.0)
    lim = AdaptiveLimiter(8, 256, clock=clock)
    lim.waiting, lim.provider.taken = 50, 8
    lim.succeeded(RateHeaders(limit=500, remaining=0, reset=2.5))
    assert lim.limit == 8 and not lim.free()
    assert lim.pause_left() == 2.5
    clock.now = 102.4
    assert lim.pause_left() == pytest.approx(0.1) and not lim.free()
    lim.succeeded()  # no growth during the pause
    assert lim.limit == 8
    clock.now = 102.5
    assert lim.free() and lim.room is None  # a new window: its budget is not known yet
    lim.succeeded()
    assert lim.limit == 16


def test_growth_stops_once_the_window_has_no_room_beyond_the_limit() -> None:
    clock = Clock(0.0)
    lim = AdaptiveLimiter(8, 256, clock=clock)
    lim.waiting, lim.provider.taken = 50, 8
    lim.succeeded(RateHeaders(remaining=40, reset=6.0))
    assert lim.limit == 16  # 40 left: room for more than 8
    lim.succeeded(RateHeaders(remaining=12))
    assert lim.limit == 16  # 12 left, not more than 16: no growth
    for _ in range(11):
        lim.started()
    assert (lim.room, lim.free()) == (1, True)
    lim.started()  # the window's last request: the next waits for the reset
    assert lim.room == 0 and lim.pause_left() == 6.0


def test_without_a_reset_header_the_pause_is_the_default() -> None:
    clock = Clock(10.0)
    lim = AdaptiveLimiter(8, 256, clock=clock)
    lim.succeeded(RateHeaders(remaining=0))
    assert lim.pause_left() == DEFAULT_RESET


def test_rate_headers_as_providers_send_them() -> None:
    openai = {
        "x-ratelimit-limit-requests": "500",
        "x-ratelimit-remaining-requests": "499",
        "x-ratelimit-reset-requests": "120ms",
    }
    assert rate_headers(openai) == RateHeaders(limit=500, remaining=499, reset=0.12)
    assert rate_headers({"x-ratelimit-remaining-requests": "0"}) == RateHeaders(remaining=0)
    litellm = {  # what litellm's additional_headers hold for an OpenAI-style provider
        "x-ratelimit-remaining-requests": "0",
        "llm_provider-x-ratelimit-remaining-requests": "0",
        "llm_provider-x-ratelimit-reset-requests": "1m",
    }
    assert rate_headers(litellm) == RateHeaders(remaining=0, reset=60.0)
    assert rate_headers({"retry-after": "3"}) is None
    assert rate_headers({"x-ratelimit-remaining-requests": "many"}) is None
    assert [parse_reset(v) for v in ("1s", "6m0s", "1m30.5s", "20ms", "2.5", "soon", None)] == [
        1.0,
        360.0,
        90.5,
        0.02,
        2.5,
        None,
        None,
    ]
    assert parse_reset("2001-01-01T00:00:00Z") == 0.0  # a date in the past: now


def test_the_gateway_starts_at_8_up_to_the_concurrency_flag(tmp_path: Path) -> None:
    from promptgen.llm.cores import physical_cores
    from promptgen.llm.local import LocalBackend
    from promptgen.llm.openai_compat import OpenAICompatBackend
    from promptgen.llm.remote import RemoteBackend

    default = LLM(load_settings({"cache": False}, env={}, cwd=tmp_path))
    remote = default.concurrency_for(RemoteBackend(), "anthropic/claude-x")
    assert remote == Bounds(8, 256, "anthropic")  # litellm's provider prefix
    cores = physical_cores()  # the embedded model: a call per physical core, fixed
    assert default.concurrency_for(LocalBackend(), "local/qwen") == Bounds(cores, cores)
    flag = LLM(
        load_settings(
            {"concurrency": 20, "cache": False, "api_base": "http://127.0.0.1:9/v1"},
            env={},
            cwd=tmp_path,
        )
    )
    served = flag.concurrency_for(OpenAICompatBackend("http://127.0.0.1:9/v1"), "m")
    assert served == Bounds(8, 20, "http://127.0.0.1:9/v1")  # the server, for every model
    low = LLM(load_settings({"concurrency": 3, "cache": False}, env={}, cwd=tmp_path))
    assert low.concurrency_for(RemoteBackend(), "openai/x") == Bounds(3, 3, "openai")


def test_the_global_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    import resource

    monkeypatch.setattr(resource, "getrlimit", lambda _: (1024, 4096))
    assert (global_cap(8), global_cap(256), global_cap(1024)) == (32, 512, 512)
    monkeypatch.setattr(resource, "getrlimit", lambda _: (resource.RLIM_INFINITY,) * 2)
    assert (global_cap(8), global_cap(256)) == (32, 1024)
