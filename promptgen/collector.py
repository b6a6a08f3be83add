"""The garbage collector's pace during a run.

Every call in flight leaves a few reference cycles behind (the HTTP client's request and
response objects point at each other), so CPython's cyclic collector runs often, and
each time it walks what the run has built and, every few rounds, everything the process
holds: the imported libraries and the loaded context. In a wide evaluation (~3,800
calls) that was ~40% of the client's CPU (bench/profile_eval.py prints it). For the
length of a run, what exists when it starts is frozen (no collection scans it again;
it stays alive as it would anyway) and young objects are collected every 50,000
allocations instead of every 700, which bounds the extra memory to a few megabytes.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

YOUNG_THRESHOLD = 50_000  # allocations between collections of the youngest generation
MIDDLE_THRESHOLD = 10  # young collections between collections of the middle one

_depth = 0  # runs of a batch share one process: the first in sets the pace, the last out restores
_saved: tuple[tuple[int, int, int], bool] | None = None


@contextmanager
def run_pace() -> Iterator[None]:
    """Collect less often while a run lasts; the thresholds and the frozen set the
    process had are restored when the last run ends."""
    global _depth, _saved
    if _depth == 0:
        thresholds = gc.get_threshold()
        froze = gc.get_freeze_count() == 0  # someone else's freeze is left as it is
        if froze:
            gc.freeze()
        gc.set_threshold(
            max(thresholds[0], YOUNG_THRESHOLD), max(thresholds[1], MIDDLE_THRESHOLD), thresholds[2]
        )
        _saved = (thresholds, froze)
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if _depth == 0 and _saved is not None:
            thresholds, froze = _saved
            gc.set_threshold(*thresholds)
            if froze:
                gc.unfreeze()
            _saved = None
