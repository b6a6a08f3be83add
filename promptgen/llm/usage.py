"""Usage accounting: tokens, cost, latency and cache hits per call, model and stage."""

from __future__ import annotations

from promptgen.results import Usage, UsageTotals

# (stage, start, end) of one call that reached a model, in time.perf_counter() seconds
Span = tuple[str | None, float, float]


class UsageTracker:
    def __init__(self) -> None:
        self.totals = UsageTotals()
        # Every call's span, when someone asks (bench/pipeline.py --levels sets a list).
        self.timeline: list[Span] | None = None

    def record(self, model: str, stage: str | None, usage: Usage) -> None:
        t = self.totals
        t.total = t.total + usage
        t.by_model[model] = t.by_model.get(model, Usage()) + usage
        if stage:
            t.by_stage[stage] = t.by_stage.get(stage, Usage()) + usage
