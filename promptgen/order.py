"""Every list of a context in one canonical order, whatever order its items came in.

Units of work run side by side and finish in any order; what they append (runs,
verdicts, groundtruth attempts, `done` keys, counts, usage) would be saved in the order
they finished, so two identical runs would write different files. `canonical` sorts
each list by stable keys: the test set's own order (already canonical: see
`stage.sort_tests`), the models in the order the options name them, run indexes, the
metric order. Sorting an already sorted list is linear, so calling it before every
save costs little; a resumed run ends in the same order as a straight one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from promptgen.context import Context
from promptgen.results import GroundtruthAttempt, MetricInfo, MetricResult, StageRecord

V = TypeVar("V")
Rank = Callable[[str | None], tuple[int, str]]


def ranker(order: Iterable[str]) -> Rank:
    """A key for names: those in `order` by their (first) position, then others by name."""
    known: dict[str, int] = {}
    for name in order:
        known.setdefault(name, len(known))
    unknown = len(known)

    def key(name: str | None) -> tuple[int, str]:
        text = name or ""
        return (known.get(text, unknown), text)

    return key


def by_keys(mapping: Mapping[str, V], key: Callable[[str], Any] = str) -> dict[str, V]:
    """The same table with its keys sorted by `key`."""
    return {k: mapping[k] for k in sorted(mapping, key=key)}


def run_key(ctx: Context) -> Callable[[str, str, int], tuple[Any, ...]]:
    """The order of the evaluation's cells (`selection.cells`): model, test, run index."""
    model = ranker(ctx.options.models.models)
    test = ranker(t.id for t in ctx.tests)
    return lambda test_id, name, index: (model(name), test(test_id), index)


def canonical(ctx: Context, stages: Sequence[str] = ()) -> None:
    """Put every list and keyed table of `ctx` in canonical order (`stages`: the
    pipeline's stage order, for the stage records and the usage per stage)."""
    cell = run_key(ctx)
    metric = ranker(m.name for m in _metrics(ctx))
    ctx.test_runs.sort(key=lambda r: cell(r.test_id, r.model, r.run_index))
    ctx.reorder_verdicts(lambda r: (*cell(r.test_id, r.model, r.run_index), *_judged(r, metric)))
    test = ranker(t.id for t in ctx.tests)
    ctx.groundtruth.sort(key=lambda a: _attempt(a, test))
    for run in ctx.test_runs:
        run.metrics = by_keys(run.metrics, metric)
    stage = ranker(stages)
    ctx.stages = by_keys(ctx.stages, stage)
    for record in ctx.stages.values():
        _record(record)
    ctx.schema_refusals.sort(key=lambda r: (r.model, r.schema_name, r.mode, r.message))
    ctx.usage.by_model = by_keys(ctx.usage.by_model)
    ctx.usage.by_stage = by_keys(ctx.usage.by_stage, stage)
    if ctx.review is not None:
        ctx.review.importance = by_keys(ctx.review.importance, test)
        ctx.review.notes = by_keys(ctx.review.notes, test)
    if ctx.mutation is not None:
        mutant = ranker(m.id for m in ctx.mutation.mutants)
        ctx.mutation.runs.sort(
            key=lambda r: (mutant(r.mutant_id), *cell(r.test_id, r.model, r.run_index))
        )
        ctx.mutation.verdicts.sort(key=lambda v: mutant(v.mutant_id))


def _metrics(ctx: Context) -> list[MetricInfo]:
    """The metrics in the order they were asked for; checks compiled from rules (added
    as each rule's compilation finished) follow, in rule order."""
    compiled = ranker(c.name for c in ctx.compiled_rules)
    names = {c.name for c in ctx.compiled_rules}
    ctx.metrics.sort(key=lambda m: compiled(m.name) if m.name in names else (-1, ""))
    return list(ctx.metrics)


def _judged(result: MetricResult, metric: Rank) -> tuple[Any, ...]:
    """Metric order, then the check (no judge) before the judges, by name."""
    return (*metric(result.metric), result.judge is not None, result.judge or "")


def sort_groundtruth(ctx: Context) -> None:
    """Groundtruth attempts in the tests' order, then by attempt (the groundtruth stage
    keeps its list so as it goes; `canonical` does it before every save)."""
    test = ranker(t.id for t in ctx.tests)
    ctx.groundtruth.sort(key=lambda a: _attempt(a, test))


def _attempt(attempt: GroundtruthAttempt, test: Rank) -> tuple[Any, ...]:
    return (*test(attempt.test_id), attempt.attempt)


def _record(record: StageRecord) -> None:
    """A stage's bookkeeping by key: which unit finished or failed first is no part of
    it (the failure a stage reports when no unit left has one is then the last by key)."""
    record.done.sort()
    record.failures = by_keys(record.failures)
    record.counts = by_keys(record.counts)
    record.notes = by_keys(record.notes)
