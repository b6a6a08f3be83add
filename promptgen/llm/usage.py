"""Usage accounting: tokens, cost, latency and cache hits per call, model and stage."""

from __future__ import annotations

from promptgen.results import Usage, UsageTotals


class UsageTracker:
    def __init__(self) -> None:
        self.totals = UsageTotals()

    def record(self, model: str, stage: str | None, usage: Usage) -> None:
        t = self.totals
        t.total = t.total + usage
        t.by_model[model] = t.by_model.get(model, Usage()) + usage
        if stage:
            t.by_stage[stage] = t.by_stage.get(stage, Usage()) + usage
