"""Concurrency: a global cap, adaptive per-model caps, and an order-preserving fan-out."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager
from typing import TypeVar

from promptgen.errors import sole_error

T = TypeVar("T")


class AdaptiveLimiter:
    """At most `limit` calls in flight; halves after a 429, creeps back up on success."""

    def __init__(self, limit: int, *, recover_after: int = 10) -> None:
        self.max_limit = max(1, limit)
        self.limit = self.max_limit
        self.in_flight = 0
        self.recover_after = recover_after
        self._successes = 0
        self._cond = asyncio.Condition()

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        async with self._cond:
            await self._cond.wait_for(lambda: self.in_flight < self.limit)
            self.in_flight += 1
        try:
            yield
        finally:
            async with self._cond:
                self.in_flight -= 1
                self._cond.notify(1)  # one freed slot wakes one waiter, not the whole queue

    def rate_limited(self) -> None:
        self.limit = max(1, self.limit // 2)
        self._successes = 0

    def succeeded(self) -> None:
        self._successes += 1
        if self.limit < self.max_limit and self._successes >= self.recover_after:
            self.limit += 1
            self._successes = 0


class Limits:
    """The global semaphore plus one adaptive limiter per model."""

    def __init__(self, global_limit: int = 32) -> None:
        self.global_limit = global_limit
        self._global = asyncio.Semaphore(global_limit)
        self._models: dict[str, AdaptiveLimiter] = {}

    def for_model(self, model: str, limit: int) -> AdaptiveLimiter:
        limiter = self._models.get(model)
        if limiter is None:
            limiter = self._models[model] = AdaptiveLimiter(limit)
        return limiter

    @asynccontextmanager
    async def slot(self, model: str, limit: int) -> AsyncIterator[AdaptiveLimiter]:
        limiter = self.for_model(model, limit)
        async with limiter.slot(), self._global:
            yield limiter


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
