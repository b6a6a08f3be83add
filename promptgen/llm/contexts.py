"""Which context of an embedded model a call runs on, and with how many threads.

Calls run on as many contexts at once as there are physical cores, over all embedded
models together (`Contexts.slots`). A model gets a second context (the same weights,
its own KV cache; the kept prefix states are the model's, shared) only when two of its
calls run at once; a call takes the context freed last, so calls one after another
stay on the context already holding their prefix. A call computing alone uses every
core; calls computing at once split them (`Cores`), which the engine re-reads before
every batch it decodes: a call that started alone gives up a core at its next token
when another starts, and takes it back when that one ends.

On 2 cores the 1.5B model writes 1.4 times as fast with 2 threads as with 1 and reads
1.8 times as fast, so two calls at 1 thread each get through more than one at 2
(docs/performance.md).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Generic, TypeVar

T = TypeVar("T")


class Cores:
    """The cores the embedded models' calls share, and how many compute now."""

    def __init__(self, total: int) -> None:
        self.total = max(1, total)
        self.active = 0
        self._lock = threading.Lock()

    @contextmanager
    def computing(self) -> Iterator[None]:
        with self._lock:
            self.active += 1
        try:
            yield
        finally:
            with self._lock:
                self.active -= 1

    @contextmanager
    def waiting(self) -> Iterator[None]:
        """A computing call that waits (for another's read): not counted meanwhile."""
        with self._lock:
            self.active -= 1
        try:
            yield
        finally:
            with self._lock:
                self.active += 1

    def share(self) -> int:
        """Threads for one computing call: the cores split between the calls computing."""
        return max(1, self.total // max(1, self.active))


class Contexts(Generic[T]):
    """The contexts of every embedded model, made by `make(name)` when first needed."""

    def __init__(self, make: Callable[[str], T], cores: Cores) -> None:
        self.make = make
        self.cores = cores
        self.slots = threading.BoundedSemaphore(cores.total)
        self.free: dict[str, list[T]] = {}
        self.made: dict[str, int] = {}
        self._lock = threading.Lock()

    def _take(self, name: str) -> T:
        with self._lock:
            free = self.free.get(name)
            if free:
                return free.pop()
        context = self.make(name)  # outside the lock: another model's call goes on
        with self._lock:
            self.made[name] = self.made.get(name, 0) + 1
        return context

    def _give(self, name: str, context: T) -> None:
        with self._lock:
            self.free.setdefault(name, []).append(context)

    @contextmanager
    def use(self, name: str) -> Iterator[T]:
        """A context of `name` for one call, under a compute slot, counted as computing."""
        with self.slots:
            context = self._take(name)
            try:
                with self.cores.computing():
                    yield context
            finally:
                self._give(name, context)

    def close(self) -> None:
        """Free every context not in use (at exit; one in use is its call's to finish)."""
        with self._lock:
            contexts = [c for free in self.free.values() for c in free]
            self.free.clear()
        for context in contexts:
            close = getattr(context, "close", None)
            if callable(close):
                close()

    def any(self, name: str) -> T:
        """A context of `name` for a caller that drives it alone (a benchmark)."""
        context = self._take(name)
        self._give(name, context)
        return context
