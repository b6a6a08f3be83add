"""The one contract every metric keeps: `await metric.evaluate(case) -> Verdict`.

Deterministic checks, the compliance judge, score judges, `*.metric.prompty` judges and
groundtruth judges all implement it; the stages only ever call `evaluate`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from promptgen.context import PASS_SCORE
from promptgen.results import MetricInfo, Outcome, Test

if TYPE_CHECKING:
    from promptgen.llm import LLM


@dataclass(frozen=True)
class Case:
    """One output to evaluate, and everything a metric may read about it.

    values: what a judge template can use (prompt, intent, rules, input, output,
    groundtruth, and the prompt's own inputs); arguments: the test's call arguments
    (checks fill `{{name}}` from them); judge: the eval model (None for a check);
    steps: the named answers of a multi-step or multi-run prompt (TestRun.steps).
    """

    test: Test
    output: str
    values: Mapping[str, Any] = field(default_factory=dict)
    arguments: Mapping[str, Any] = field(default_factory=dict)
    judge: str | None = None
    llm: LLM | None = None
    stage: str = "metrics"
    steps: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Verdict:
    score: float | None = None
    outcome: Outcome = "unknown"
    reason: str | None = None
    error: str | None = None

    @classmethod
    def of(cls, outcome: Outcome, reason: str | None = None) -> Verdict:
        """An ok/err verdict (ok counts 100, err 0)."""
        return cls(score={"ok": 100.0, "err": 0.0}.get(outcome), outcome=outcome, reason=reason)

    @classmethod
    def scored(cls, score: float, reason: str | None = None) -> Verdict:
        return cls(score=score, outcome="ok" if score >= PASS_SCORE else "err", reason=reason)


@dataclass
class MetricBase:
    """What the metric kinds share: their description and the flags of the protocol
    (an LLM judge by default)."""

    info: MetricInfo
    _: KW_ONLY
    judged: bool = True
    scores_groundtruth: bool = False
    needs_groundtruth: bool = False
    needs_class: bool = False
    reads_analysis: bool = False

    @property
    def name(self) -> str:
        return self.info.name


class Metric(Protocol):
    """A way to score one output.

    judged: asks an eval model (one verdict per judge); a check asks none.
    scores_groundtruth: scores groundtruth answers, not the models' outputs.
    needs_groundtruth: only for tests with an accepted groundtruth (accuracy).
    needs_class: only for tests with an expected class (the `expected_class` check).
    reads_analysis: reads the intent, input specification or rules (so a run that
    generates no tests still extracts them).
    """

    info: MetricInfo
    judged: bool
    scores_groundtruth: bool
    needs_groundtruth: bool
    needs_class: bool
    reads_analysis: bool

    @property
    def name(self) -> str: ...

    async def evaluate(self, case: Case) -> Verdict: ...
