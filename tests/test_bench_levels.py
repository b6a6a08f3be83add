"""The benchmark's level measure (bench/levels.py) on hand-made timelines."""

from __future__ import annotations

from bench.levels import levels


def test_calls_that_go_out_together_share_a_level() -> None:
    spans = [("intent", 0.0, 0.3), ("rules", 0.01, 0.31), ("tests", 0.32, 0.62)]
    total, rows = levels(spans)
    assert total == 2
    assert [(r.stage, r.first, r.last, r.calls) for r in rows] == [
        ("intent", 1, 1, 1),
        ("rules", 1, 1, 1),
        ("tests", 2, 2, 1),
    ]


def test_a_chain_of_retries_counts_every_link() -> None:
    # answer -> judge -> answer -> judge: four levels in one stage
    spans = [("groundtruth", i * 0.3, i * 0.3 + 0.29) for i in range(4)]
    total, rows = levels(spans)
    assert total == 4
    assert rows[0].levels == 4


def test_overlapping_calls_are_not_dependent() -> None:
    spans = [("runs", 0.0, 0.5), ("runs", 0.2, 0.7), ("metrics", 0.6, 0.9)]
    total, _rows = levels(spans)
    assert total == 2  # the judge started after the first run ended
    assert levels([]) == (0, [])
