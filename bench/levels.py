"""Dependent levels of a run, measured from the spans of its calls.

A call's level is one more than the highest level among the calls that had finished
before it started: calls that go out together share a level, and a call that waited for
another's answer sits above it. With a fixed latency per call and no call waiting for a
concurrency slot, the highest level is the length of the chain of dependent calls that
the run really had (the critical path in calls), whatever the stages declare.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

Span = tuple[str | None, float, float]  # (stage, start, end), as promptgen.llm records them


@dataclass(frozen=True)
class StageLevels:
    stage: str
    calls: int
    first: int  # the lowest level of its calls
    last: int  # the highest

    @property
    def levels(self) -> int:
        return self.last - self.first + 1


def levels(spans: list[Span]) -> tuple[int, list[StageLevels]]:
    """The run's dependent levels and, per stage, the levels its calls occupy."""
    if not spans:
        return 0, []
    starts = sorted(range(len(spans)), key=lambda i: spans[i][1])
    ends = sorted(range(len(spans)), key=lambda i: spans[i][2])
    level = [0] * len(spans)
    done, best = 0, 0  # calls finished so far (by end time) and their highest level
    for i in starts:
        while done < len(ends) and spans[ends[done]][2] <= spans[i][1]:
            best = max(best, level[ends[done]])
            done += 1
        level[i] = best + 1
    by_stage: dict[str, list[int]] = defaultdict(list)
    for (stage, _, _), lv in zip(spans, level, strict=True):
        by_stage[stage or "-"].append(lv)
    rows = [StageLevels(s, len(lv), min(lv), max(lv)) for s, lv in by_stage.items()]
    return max(level), sorted(rows, key=lambda r: (r.first, r.stage))
