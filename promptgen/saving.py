"""Saving a running context: checkpoints whose cost stays a bounded share of the run.

A checkpoint serializes the context on the calling (event loop) thread, so what is
written is one consistent snapshot, in the compact form (the C JSON encoder); the
write, fsync and rename happen in a background thread, one at a time, atomically
(`context.write_atomic`: a kill leaves the last complete file). The final save waits
for that write, then writes the indented form.

How often: at most every SAVE_INTERVAL seconds, and never sooner than the last
checkpoint's cost allows: after a checkpoint that blocked the loop for `c` seconds the
next waits `c / SAVE_SHARE - c`, and the saving so far stays within SAVE_SHARE of the
time so far, however large the context grows (answers finished in between are in the
response cache, so a kill loses no call).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from promptgen.context import Context, save_context, write_atomic

SAVE_INTERVAL = 0.5
SAVE_SHARE = 0.1  # of the wall time, at most, spent saving


class Pace:
    """When the next checkpoint is due, from the measured cost of the last one."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self.clock = clock
        self.started = clock()
        self.last_end = float("-inf")
        self.last_cost = 0.0
        self.count = 0
        self.seconds = 0.0  # spent saving, in all

    def due(self) -> bool:
        """SAVE_INTERVAL since the last save ended, the pause its cost asks for, and (if
        the next costs what the last did) the saving so far within SAVE_SHARE of the
        time so far."""
        now = self.clock()
        wait = max(SAVE_INTERVAL, self.last_cost / SAVE_SHARE - self.last_cost)
        budget = SAVE_SHARE * (now - self.started)
        return now - self.last_end >= wait and self.seconds + self.last_cost <= budget

    def saved(self, started: float) -> None:
        """A save that began at `started` (from `clock`) has just ended."""
        self.last_end = self.clock()
        self.last_cost = self.last_end - started
        self.count += 1
        self.seconds += self.last_cost


class Saver:
    """Saves one context file: `checkpoint` (compact, written in the background) while
    the run goes on, `save` (indented, waited for) at the end."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._pool: ThreadPoolExecutor | None = None
        self._pending: Future[Path] | None = None

    @property
    def busy(self) -> bool:
        """The last checkpoint's write is still under way."""
        return self._pending is not None and not self._pending.done()

    def checkpoint(self, ctx: Context, *, wait: bool = False) -> None:
        """Snapshot `ctx` now; write it in the background (`wait`: before returning)."""
        self.wait()
        text = ctx.to_json(compact=True)
        if self._pool is None:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="promptgen-save")
        self._pending = self._pool.submit(write_atomic, text, self.path)
        if wait:
            self.wait()

    def save(self, ctx: Context) -> None:
        """The final save: after any checkpoint still being written, the indented form."""
        self.wait()
        save_context(ctx, self.path)

    def wait(self) -> None:
        """Let the write under way finish (its error, e.g. a full disk, is raised here)."""
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.result()

    def close(self) -> None:
        try:
            self.wait()
        finally:
            if self._pool is not None:
                self._pool.shutdown()
                self._pool = None
