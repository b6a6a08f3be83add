"""Saving a running context: the checkpoints' pace, their form, and verdict lookups."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from promptgen import Context, load_context, load_prompt
from promptgen.order import canonical
from promptgen.results import MetricInfo, MetricResult, Test, TestRun
from promptgen.saving import SAVE_INTERVAL, SAVE_SHARE, Pace, Saver

Write = Callable[[str, str], Path]
UNIT_S = 0.005  # a unit finishes every 5 ms (the 4,000-run workload: ~20 s of work)
COST_PER_UNIT_S = 0.00025  # a save costs 0.25 ms per unit already finished (1 s at 4,000)


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _simulate(units: int) -> tuple[int, float, float]:
    """`units` finishing one after another, each followed by a checkpoint when due; a
    save's cost grows with what is saved. Returns saves, seconds saving, wall seconds."""
    clock = FakeClock()
    pace = Pace(clock)
    for done in range(1, units + 1):
        clock.now += UNIT_S
        if pace.due():
            started = clock.now
            clock.now += done * COST_PER_UNIT_S
            pace.saved(started)
    return pace.count, pace.seconds, clock.now


def test_checkpoints_cost_a_bounded_share_of_the_run() -> None:
    """Once a save takes longer than SAVE_INTERVAL (0.5 s: past ~2,000 units here),
    saving after every unit would take most of the run (the old rule, a save whenever
    the last began 0.5 s ago: 2,102 saves, 1,542 s of 1,562 s at 4,000 units); the
    pace keeps it near a tenth, so twice the units cost about twice the time."""
    assert (SAVE_INTERVAL, SAVE_SHARE) == (0.5, 0.1)
    saves_2k, saving_2k, wall_2k = _simulate(2000)
    saves_4k, saving_4k, wall_4k = _simulate(4000)
    assert (saves_2k, round(saving_2k, 2), round(wall_2k, 2)) == (8, 1.18, 11.18)
    assert (saves_4k, round(saving_4k, 2), round(wall_4k, 2)) == (9, 1.94, 21.94)
    assert round(saving_2k / wall_2k, 3) == 0.106  # the last save's growth overshoots a little
    assert round(saving_4k / wall_4k, 3) == 0.089
    assert round(wall_4k / wall_2k, 2) == 1.96


def _verdicts(ctx: Context, count: int) -> Iterator[tuple[MetricResult, TestRun]]:
    for i in range(count):
        run = ctx.test_runs[i]
        yield MetricResult(
            test_id=run.test_id, model=run.model, metric="compliance", judge="j",
            outcome="ok", score=100.0,
        ), run  # fmt: skip


class CountingList(list[MetricResult]):
    """A list that counts how often it is walked from start to end."""

    walks = 0

    def __iter__(self) -> Iterator[MetricResult]:
        CountingList.walks += 1
        return super().__iter__()


def _big_context(write: Write, tests: int) -> Context:
    ctx = Context.new(load_prompt(write("p.prompty", "{{q}}\n")))
    ctx.use_metrics([MetricInfo(name="compliance", kind="compliance")])
    ctx.tests = [Test(id=f"t{i:05d}", inputs={"q": str(i)}) for i in range(tests)]
    ctx.test_runs = [TestRun(test_id=t.id, model="m", output="x") for t in ctx.tests]
    return ctx


def test_a_verdict_lookup_is_not_a_scan(write: Write) -> None:
    """Recording a verdict walks no list, even right after a save reordered them all
    (a save follows almost every unit of a large run)."""
    ctx = _big_context(write, 2000)
    found = list(_verdicts(ctx, 2000))
    for verdict, run in found[:1000]:
        ctx.record_verdicts([verdict], run)
    ctx.metric_results = CountingList(ctx.metric_results)
    ctx.record_verdicts([found[1000][0]], found[1000][1])  # the list was replaced: indexed once
    CountingList.walks = 0
    for verdict, run in found[1001:]:
        canonical(ctx)  # as every save does: sorts the verdicts
        walks = CountingList.walks
        ctx.record_verdicts([verdict], run)
        assert CountingList.walks == walks
    assert len(ctx.metric_results) == 2000
    # a verdict asked again replaces the first, in place, and the summary follows it
    again = found[5][0].model_copy(update={"outcome": "err", "score": 0.0})
    ctx.record_verdicts([again], found[5][1])
    assert len(ctx.metric_results) == 2000
    assert [r.outcome for r in ctx.metric_results if r.test_id == "t00005"] == ["err"]
    assert found[5][1].metrics["compliance"].outcome == "err"


def test_checkpoints_are_compact_and_the_final_save_indented(write: Write, tmp_path: Path) -> None:
    ctx = _big_context(write, 3)
    path = tmp_path / "out" / "context.json"
    saver = Saver(path)
    try:
        saver.checkpoint(ctx, wait=True)
        text = path.read_text(encoding="utf-8")
        assert text.count("\n") == 1 and text.startswith('{"version":2,"promptgen_version":')
        assert load_context(path).model_dump() == ctx.model_dump()
        ctx.tests = ctx.tests[:2]
        saver.save(ctx)
        text = path.read_text(encoding="utf-8")
        assert text.startswith('{\n  "version": 2,\n')
        assert [t["id"] for t in json.loads(text)["tests"]] == ["t00000", "t00001"]
        assert [p.name for p in path.parent.iterdir()] == ["context.json"]  # no temp left
    finally:
        saver.close()


def test_a_failed_background_write_is_raised(write: Write, tmp_path: Path) -> None:
    (tmp_path / "out").write_text("a file where the folder should be")
    saver = Saver(tmp_path / "out" / "context.json")
    saver.checkpoint(_big_context(write, 1))
    with pytest.raises(FileExistsError):
        saver.close()
