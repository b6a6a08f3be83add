"""The collector's pace during a run: less often, the pre-run heap frozen, all restored."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from promptgen import collector


@pytest.fixture(autouse=True)
def _default_pace() -> Iterator[None]:
    saved = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield
    gc.set_threshold(*saved)
    gc.unfreeze()


def test_a_run_collects_less_often_and_restores_the_pace() -> None:
    with collector.run_pace():
        assert gc.get_threshold() == (collector.YOUNG_THRESHOLD, collector.MIDDLE_THRESHOLD, 10)
        assert gc.get_freeze_count() > 1000  # the imported libraries, at least
    assert gc.get_threshold() == (700, 10, 10)
    assert gc.get_freeze_count() == 0


def test_runs_of_a_batch_share_one_pace_until_the_last_ends() -> None:
    first, second = collector.run_pace(), collector.run_pace()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)
    assert gc.get_threshold()[0] == collector.YOUNG_THRESHOLD  # the second still runs
    second.__exit__(None, None, None)
    assert gc.get_threshold() == (700, 10, 10) and gc.get_freeze_count() == 0


def test_a_freeze_made_by_the_caller_is_left_alone() -> None:
    gc.freeze()
    frozen = gc.get_freeze_count()
    made_after = [[] for _ in range(5000)]  # young objects a second freeze would take in
    with collector.run_pace():
        # frozen objects can still be freed by reference counting, so the count may drop
        # a little; it must not grow by what was made after the caller's freeze
        assert frozen - 1000 < gc.get_freeze_count() < frozen + len(made_after)
    assert gc.get_freeze_count() > frozen - 1000  # not unfrozen by the run
    del made_after


def test_cyclic_garbage_made_during_a_run_is_still_collected() -> None:
    class Node:
        def __init__(self) -> None:
            self.me = self

    with collector.run_pace():
        for _ in range(3 * collector.YOUNG_THRESHOLD):
            Node()
        assert sum(isinstance(o, Node) for o in gc.get_objects()) < collector.YOUNG_THRESHOLD
