"""Concurrency: a global cap, adaptive per-model caps, and an order-preserving fan-out."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TypeVar

from promptgen.errors import sole_error
from promptgen.llm.adaptive import AdaptiveLimiter, Provider, RateHeaders

T = TypeVar("T")


class Slot:
    """One call's hold on its model's limiter: what the call tells it when it is over."""

    def __init__(self, limiter: AdaptiveLimiter, epoch: int, depth: int) -> None:
        self.limiter, self.epoch, self.depth = limiter, epoch, depth

    def succeeded(self, rate: RateHeaders | None = None) -> None:
        self.limiter.succeeded(rate, depth=self.depth)

    def rate_limited(self) -> None:
        self.limiter.rate_limited(self.epoch)


@dataclass(frozen=True)
class Bounds:
    """A model's limit: where it starts, the most it may grow to, and the provider
    whose other models' answers it learns from (llm/adaptive.py)."""

    start: int
    ceiling: int
    provider: str = ""


class Limits:
    """The global semaphore plus one adaptive limiter per model."""

    def __init__(self, global_limit: int = 32) -> None:
        self.global_limit = global_limit
        self._global = asyncio.Semaphore(global_limit)
        self._models: dict[str, AdaptiveLimiter] = {}
        self._providers: dict[str, Provider] = {}
        self.in_flight = 0
        self.peak_in_flight = 0

    def for_model(self, model: str, bounds: Bounds | int) -> AdaptiveLimiter:
        """The model's limiter, made with `bounds` (a number: fixed at it) on first use."""
        limiter = self._models.get(model)
        if limiter is None:
            if isinstance(bounds, int):
                bounds = Bounds(bounds, bounds)
            provider = self._providers.setdefault(bounds.provider, Provider())
            limiter = AdaptiveLimiter(bounds.start, bounds.ceiling, provider=provider)
            self._models[model] = limiter
        return limiter

    def limiters(self) -> dict[str, AdaptiveLimiter]:
        """Every model's limiter, by model id (their figures: bench/pipeline.py)."""
        return dict(self._models)

    @asynccontextmanager
    async def slot(self, model: str, bounds: Bounds) -> AsyncIterator[Slot]:
        limiter = self.for_model(model, bounds)
        asked, queued = time.monotonic(), not limiter.free() or self._global.locked()
        async with limiter.slot() as (epoch, depth):
            await self._global.acquire()
            if queued:  # from wanting a slot to holding both (the model's, the global one)
                limiter.waited += time.monotonic() - asked
                limiter.waits += 1
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
            try:
                yield Slot(limiter, epoch, depth)
            finally:
                self.in_flight -= 1
                self._global.release()


def global_cap(ceiling: int) -> int:
    """Calls in flight over all models: 4x a model's ceiling, at least 32, and at most
    half the process's open-file limit (every call in flight holds a connection)."""
    try:
        import resource

        files = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    except (ImportError, OSError, ValueError):  # not on this platform
        files = -1
    cap = 4 * ceiling if files < 0 else min(4 * ceiling, files // 2)
    return max(32, cap)


async def bounded_gather(
    jobs: Iterable[Callable[[], Awaitable[T]]], limit: int | None = None
) -> list[T]:
    """Run `jobs` concurrently (at most `limit` at once), results in input order.

    Jobs are factories, so no coroutine is created before it can start. The gateway's
    own limits still apply underneath; `limit` only bounds how many are started.
    """
    factories = list(jobs)
    sem = asyncio.Semaphore(limit or len(factories) or 1)

    async def run(job: Callable[[], Awaitable[T]]) -> T:
        async with sem:
            return await job()

    try:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(run(job)) for job in factories]
    except BaseExceptionGroup as failed:  # the error itself, not a group holding it
        error = sole_error(failed)
        if error is failed:
            raise
        raise error from None
    return [task.result() for task in tasks]
