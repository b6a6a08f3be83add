"""Gathers the gateway's batched calls into provider batches and hands each caller its
answer (docs/scale.md).

Calls arrive one by one (every cell of the runs stage starts at once); when none has
arrived for a short while, those gathered are written as JSONL, split by the
provider's limits and submitted, one batch per chunk. Each batch is recorded in the
run's ledger (`Context.batches`) and saved at once, so a run killed while it waits
finds its batch again and polls it: a call whose request (by its cache key) is in a
batch not yet read back waits for that batch instead of going into a new one. Lines
that failed or never came back (an error file, an expired batch) go into a new,
smaller batch, a bounded number of times; then the call fails, as data.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable, Coroutine, Iterable
from dataclasses import dataclass
from typing import Any

from promptgen.llm.batch import (
    ENDED,
    BatchAPI,
    BatchLimits,
    batch_price,
    read_line,
    request_line,
    split,
)
from promptgen.llm.types import CallError, ChatRequest, RawReply
from promptgen.results import BatchJob, Usage

# What a caller gets: the reply, why there is none, or None: call the normal way (the
# provider refused the batch as a whole).
Outcome = RawReply | CallError | None
# A call's first answer as the gateway counts it: reply, usage, attempts, error line.
Attempt = tuple[RawReply | None, Usage, int, str | None]


@dataclass
class _Call:
    api: BatchAPI
    model_id: str
    request: ChatRequest
    mode: str
    label: str


class Batcher:
    """One run's batches: `await batcher.call(...)` per request."""

    def __init__(
        self, limits: BatchLimits, ledger: list[BatchJob], save: Callable[[], None]
    ) -> None:
        self.limits, self.ledger, self.save = limits, ledger, save
        self.notes: dict[str, str] = {}  # model -> why its calls were not batched
        self._waiters: dict[str, list[asyncio.Future[Outcome]]] = {}
        self._calls: dict[str, _Call] = {}
        self._queued: list[str] = []
        self._tries: Counter[str] = Counter()
        self._open = {k: j for j in ledger if not j.finished for k in j.requests.values()}
        self._polling: set[str] = set()
        self._flusher: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._last_add = 0.0
        # One submission at a time: the ledger lists batches in the order the provider
        # made them (two flushes, a retry's and a late call's, can overlap).
        self._submitting = asyncio.Lock()

    async def attempt(
        self, api: BatchAPI, model_id: str, key: str, request: ChatRequest, mode: str, label: str
    ) -> Attempt | None:
        """The gateway's first answer to `request` from a batch, costed at the batch
        price; None: make the normal call."""
        outcome = await self.call(api, model_id, key, request, mode, label)
        if outcome is None:
            return None
        if isinstance(outcome, CallError):
            return None, Usage(calls=1), 1, f"{model_id}: {outcome.message}"
        tokens = (outcome.prompt_tokens, outcome.completion_tokens)
        cost = batch_price(model_id, *tokens)
        usage = Usage(
            prompt_tokens=tokens[0],
            completion_tokens=tokens[1],
            cached_tokens=outcome.cached_tokens,
            cost=cost,
            calls=1,
        )
        return outcome, usage, 1, None

    async def call(
        self, api: BatchAPI, model_id: str, key: str, request: ChatRequest, mode: str, label: str
    ) -> Outcome:
        """The answer to `request` (`key`: its cache key), from a batch."""
        future: asyncio.Future[Outcome] = asyncio.get_running_loop().create_future()
        first = key not in self._waiters
        self._waiters.setdefault(key, []).append(future)
        if first:
            self._calls[key] = _Call(api, model_id, request, mode, label)
            job = self._open.get(key)
            if job is not None:  # submitted by a run that was stopped: poll, never resubmit
                self._watch(api, job)
            else:
                self._queue(key)
        return await future

    # -- submitting ----------------------------------------------------------------------

    def _queue(self, key: str) -> None:
        self._queued.append(key)
        self._last_add = time.monotonic()
        if self._flusher is None:
            self._flusher = self._spawn(self._flush_when_quiet())

    async def _flush_when_quiet(self) -> None:
        while True:
            await asyncio.sleep(self.limits.gather)
            if time.monotonic() - self._last_add >= self.limits.gather:
                break
        keys, self._queued, self._flusher = self._queued, [], None
        by_model: dict[str, list[str]] = {}
        for key in keys:
            by_model.setdefault(self._calls[key].model_id, []).append(key)
        for model_id, model_keys in by_model.items():
            try:
                await self._submit_all(model_id, model_keys)
            except Exception as exc:  # never leave a caller waiting
                self._settle(model_keys, CallError(f"batch not submitted: {exc}"))

    async def _submit_all(self, model_id: str, keys: list[str]) -> None:
        labels: Counter[str] = Counter()
        lines: list[tuple[str, bytes]] = []
        custom_key: dict[str, str] = {}
        for key in keys:
            call = self._calls[key]
            labels[call.label] += 1
            # custom_ids are unique within a file: a second call of one unit gets #2, ...
            seen = labels[call.label]
            custom_id = call.label if seen == 1 else f"{call.label}#{seen}"
            custom_key[custom_id] = key
            lines.append((custom_id, request_line(custom_id, call.request, call.mode)))
        api = self._calls[keys[0]].api
        for chunk in split(lines, self.limits):
            ids = {cid: custom_key[cid] for cid, _ in chunk}
            async with self._submitting:
                try:
                    file_id, batch_id = await api.submit([line for _, line in chunk], model_id)
                except CallError as err:
                    where = f" (HTTP {err.status})" if err.status else ""
                    self.notes[model_id] = (
                        f"{model_id}: the provider refused the batch{where}: {err.message}; "
                        "called one by one"
                    )
                    self._settle(ids.values(), None)
                    continue
                job = BatchJob(id=batch_id, model=model_id, input_file_id=file_id, requests=ids)
                self.ledger.append(job)
            self._open.update((key, job) for key in ids.values())
            self.save()  # now: a run killed from here on must find this batch
            self._watch(api, job)

    # -- waiting -------------------------------------------------------------------------

    def _watch(self, api: BatchAPI, job: BatchJob) -> None:
        if job.id not in self._polling:
            self._polling.add(job.id)
            self._spawn(self._poll(api, job))

    async def _poll(self, api: BatchAPI, job: BatchJob) -> None:
        delay, waited = self.limits.poll, 0.0
        try:
            while True:
                try:
                    state = await api.state(job.id)
                except CallError as err:
                    if not err.retryable or waited >= self.limits.max_wait:
                        self._settle(job.requests.values(), err)
                        return
                else:
                    job.status = state.status
                    if state.status in ENDED:
                        break
                if waited >= self.limits.max_wait:
                    message = (
                        f"batch {job.id} is still {job.status} after {waited:.0f}s; "
                        "a re-run polls it again"
                    )
                    self._settle(job.requests.values(), CallError(message))
                    return
                await asyncio.sleep(delay)
                waited += delay
                delay = min(delay * 1.5, self.limits.max_poll)
            await self._read_back(api, job, state.output_file_id, state.error_file_id)
        except Exception as exc:  # never leave a caller waiting
            self._settle(job.requests.values(), CallError(f"batch {job.id}: {exc}"))
        finally:
            self._polling.discard(job.id)

    async def _read_back(
        self, api: BatchAPI, job: BatchJob, output: str | None, errors: str | None
    ) -> None:
        if job.status == "failed":  # the whole file was refused (validation)
            self.notes[job.model] = (
                f"{job.model}: batch {job.id} failed validation; called one by one"
            )
            self._finish(job)
            self._settle(job.requests.values(), None)
            return
        try:
            lines = [*await api.lines(output), *await api.lines(errors)]
        except CallError as err:
            self._settle(job.requests.values(), err)
            return
        answers: dict[str, RawReply | CallError] = {}
        for custom_id, outcome in map(read_line, lines):
            if not isinstance(answers.get(custom_id), RawReply):
                answers[custom_id] = outcome
        self._finish(job)
        missing = CallError(f"batch {job.id} ({job.status}) returned no answer for this request")
        for custom_id, key in job.requests.items():
            outcome = answers.get(custom_id, missing)
            if isinstance(outcome, RawReply) or key not in self._waiters:
                self._settle([key], outcome)
            elif self._tries[key] < self.limits.retries:
                self._tries[key] += 1
                self._queue(key)  # with the others that failed: a new, smaller batch
            else:
                self._settle([key], outcome)

    def _finish(self, job: BatchJob) -> None:
        job.finished = True
        for key in job.requests.values():
            if self._open.get(key) is job:
                del self._open[key]

    def _settle(self, keys: Iterable[str], outcome: Outcome) -> None:
        for key in list(keys):
            for future in self._waiters.pop(key, []):
                if not future.done():
                    future.set_result(outcome)
            self._calls.pop(key, None)

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task
