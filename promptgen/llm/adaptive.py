"""A model's concurrency limit that follows the provider (docs/llm.md#concurrency).

The limit starts at `start` (8 unless --concurrency is lower) and grows while calls
succeed and others wait for a slot. Until the model's first 429 each success doubles
it, up to `GROWTH` times the most calls the provider has answered at once (for any of
its models: `Provider`), so one round trip can at most widen eightfold what the provider
has shown it takes; a call that finds every slot taken first widens the limit to that bound
(`widen`), so a model new to the provider, or a round wider than the model's last, does
not wait for answers the provider has given already; after a 429 it grows by one per
`limit` successes. A 429 (or a 503)
halves it, once per round of calls (a call that started before the last cut does not
cut again). It never exceeds `ceiling` (--concurrency) nor the provider's
`x-ratelimit-limit-requests`; `x-ratelimit-remaining-requests` stops the growth once
the provider's window has no room for more than the limit, and at 0 calls wait for the
window's reset (`x-ratelimit-reset-requests`). The arithmetic is plain methods on a
clock that can be faked; `slot()` is the asyncio side.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

# Seconds calls wait after `x-ratelimit-remaining-requests: 0` when the provider does
# not say when its window resets.
DEFAULT_RESET = 1.0
# How far the limit may grow beyond the most calls the provider has answered at once:
# 8, not 4, so that the speech-tag workload's rounds (24 expansions after rounds of 3-5
# calls, 84 runs per model under test after 18-24 calls) go out at once
# (docs/performance.md#adaptive-concurrency); a provider that cannot take them answers
# 429, which halves the limit.
GROWTH = 8


@dataclass(frozen=True)
class RateHeaders:
    """What a provider's reply says of its request budget (`x-ratelimit-*-requests`)."""

    limit: int | None = None  # requests the window allows
    remaining: int | None = None  # requests left in the window, this one counted
    reset: float | None = None  # seconds until the window resets


class Provider:
    """What one provider (an --api-base server, a litellm provider) has shown it takes,
    shared by the limiters of its models."""

    def __init__(self) -> None:
        self.taken = 0  # the most calls of one model in flight at once that it answered


class AdaptiveLimiter:
    """At most `limit` calls in flight; the limit adapts as the module docstring says."""

    def __init__(
        self,
        start: int,
        ceiling: int | None = None,
        *,
        provider: Provider | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ceiling = max(1, ceiling if ceiling is not None else start)
        self.limit = max(1, min(start, self.ceiling))
        self.threshold = self.ceiling  # quick growth below it; a 429 sets it to the new limit
        self.in_flight = 0
        self.waiting = 0  # calls that want a slot and have none yet
        self.cuts = 0  # 429 cuts so far: the epoch a call starts in
        self.provider = provider or Provider()
        self.provider_limit: int | None = None
        self.room: int | None = None  # calls that may still start in the provider's window
        self.paused_until = 0.0
        self.reset: float | None = None  # the provider's last `x-ratelimit-reset-requests`
        self._successes = 0
        self._clock = clock
        self._cond = asyncio.Condition()
        # What the bench and the docs' figures read (the waits are counted by `Limits`,
        # which also holds the global cap).
        self.waited = 0.0  # seconds calls spent from wanting a slot to getting it, summed
        self.waits = 0  # calls that did not get a slot at once
        self.calls = 0
        self.peak_in_flight = 0
        self.peak_limit = self.limit
        self.rate_limits = 0  # 429s seen

    # -- the arithmetic (no awaiting) ----------------------------------------------

    def pause_left(self) -> float:
        """Seconds until calls may start again (0: they may); a pause that is over ends
        the provider's window: its remaining count is no longer known."""
        if not self.paused_until:
            return 0.0
        left = self.paused_until - self._clock()
        if left > 0:
            return left
        self.paused_until, self.room = 0.0, None
        return 0.0

    def free(self) -> bool:
        """Whether a call may start now."""
        return self.in_flight < self.limit and self.pause_left() == 0

    def widen(self) -> None:
        """A call found every slot taken: before it waits, the limit grows to what the
        provider has already shown it takes (`GROWTH` times the most calls of one of its
        models it answered at once), as a success would have grown it had calls been
        waiting then. Without it a round wider than the last one waited a round trip
        for the first answers, although the provider had taken as many calls of this
        model, or of its other models, before (issue 30: the judges' first verdicts,
        the models under test's first runs, the expansions after the tests)."""
        if self.limit >= self.threshold or not self._room_to_grow():
            return  # a 429 set the threshold: after it, growth is one per round only
        widest = min(self.threshold, self._bound(), GROWTH * self.provider.taken)
        if widest > self.limit:
            self.limit = widest
            self.peak_limit = max(self.peak_limit, self.limit)

    def started(self) -> tuple[int, int]:
        """A call took a slot; returns its epoch (for `rate_limited`) and the calls in
        flight with it (for `succeeded`)."""
        self.in_flight += 1
        self.calls += 1
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        if self.room is not None:
            self.room -= 1
            if self.room <= 0:
                self._pause(self.reset)
        return self.cuts, self.in_flight

    def succeeded(self, rate: RateHeaders | None = None, *, depth: int | None = None) -> None:
        """A call that went out with `depth` calls in flight (itself counted; default:
        those in flight now) succeeded: read the provider's headers, then grow if calls
        wait."""
        taken = depth if depth is not None else self.in_flight
        self.provider.taken = max(self.provider.taken, taken)
        if rate is not None:
            self._read(rate)
        wanting = self.waiting - (self.limit - self.in_flight)  # beyond the free slots
        if wanting <= 0 or self.limit >= self._bound() or not self._room_to_grow():
            return
        if self.limit < self.threshold:
            widest = GROWTH * self.provider.taken
            self.limit = min(self.threshold, max(self.limit, min(2 * self.limit, widest)))
        else:
            self._successes += 1
            if self._successes < self.limit:
                return
            self.limit += 1
            self._successes = 0
        self.limit = min(self.limit, self._bound())
        self.peak_limit = max(self.peak_limit, self.limit)

    def rate_limited(self, epoch: int) -> None:
        """A call that started in `epoch` got a 429: halve the limit, once per epoch."""
        self.rate_limits += 1
        if epoch < self.cuts:
            return  # it started before the last cut, which answered it already
        self.cuts += 1
        self.limit = self.threshold = max(1, self.limit // 2)
        self._successes = 0

    def _bound(self) -> int:
        return min(self.ceiling, self.provider_limit or self.ceiling)

    def _room_to_grow(self) -> bool:
        return self.pause_left() == 0 and (self.room is None or self.room > self.limit)

    def _read(self, rate: RateHeaders) -> None:
        if rate.limit is not None and rate.limit > 0:
            self.provider_limit = rate.limit
            self.limit = min(self.limit, self._bound())
        if rate.reset is not None:
            self.reset = rate.reset
        if rate.remaining is not None:
            self.room = max(0, rate.remaining)
            if self.room == 0:
                self._pause(rate.reset)

    def _pause(self, reset: float | None) -> None:
        until = self._clock() + (reset if reset is not None else DEFAULT_RESET)
        self.paused_until = max(self.paused_until, until)

    # -- asyncio ---------------------------------------------------------------------

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[tuple[int, int]]:
        """Hold a slot for one call; yields its epoch and depth (`started`)."""
        self.waiting += 1
        if self.in_flight >= self.limit:
            self.widen()
        try:
            while True:
                async with self._cond:
                    await self._cond.wait_for(lambda: self.in_flight < self.limit)
                    pause = self.pause_left()
                    if pause == 0:
                        epoch, depth = self.started()
                        break
                await asyncio.sleep(pause)
        finally:
            self.waiting -= 1
        try:
            yield epoch, depth
        finally:
            async with self._cond:
                self.in_flight -= 1
                # Every free slot wakes one waiter (the limit may have grown), not the queue.
                self._cond.notify(max(1, self.limit - self.in_flight))
