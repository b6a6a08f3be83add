"""Promptarchitect tests as metrics: every test of a Promptarchitect prompt file
(formats/promptarchitect.py keeps them normalised in `extra["promptarchitect"]`) is a
metric of every run, named `pa:<test id>`.

question, score and metric (faithfulness) are LLM judges, run by every eval model
(pa_judges.py); property, format, language and keyword are deterministic (pa_checks.py).
All are reported as checks: a failed one fails the run in report.md and JUnit, like any
check. None reads the intent or the rules, so `promptgen pa run` (no compliance judge,
no generated tests) skips the analysis stages.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from promptgen.errors import BadInputError
from promptgen.evaluation.pa_checks import run_check
from promptgen.evaluation.pa_judges import (
    FaithfulnessJudge,
    PaQuestionJudge,
    PaScoreJudge,
    limit_text,
)
from promptgen.evaluation.protocol import Case, Metric, MetricBase, Verdict
from promptgen.model import PromptUnderTest
from promptgen.options import Options
from promptgen.results import MetricInfo

LOAD_ORDER = 4  # after the checks
PREFIX = "pa:"
JUDGED: dict[str, type[PaQuestionJudge | PaScoreJudge | FaithfulnessJudge]] = {
    "question": PaQuestionJudge,
    "score": PaScoreJudge,
    "metric": FaithfulnessJudge,
}
CHECKED = ("property", "format", "language", "keyword")


@dataclass
class PaCheck(MetricBase):
    """A deterministic Promptarchitect test: pass/fail with its measure in the reason."""

    spec: dict[str, Any]

    async def evaluate(self, case: Case) -> Verdict:
        result = run_check(self.spec, case.output)
        return Verdict.of("ok" if result.passed else "err", result.reason)


def pa_tests(prompt: PromptUnderTest) -> dict[str, dict[str, Any]]:
    """The normalised tests of a Promptarchitect prompt ({} for any other prompt)."""
    if prompt.format != "promptarchitect":
        return {}
    facts = prompt.extra.get("promptarchitect")
    tests = facts.get("tests") if isinstance(facts, dict) else None
    return tests if isinstance(tests, dict) else {}


def metrics(prompt: PromptUnderTest, options: Options) -> list[Metric]:
    return [make_metric(test_id, spec, prompt.source) for test_id, spec in pa_tests(prompt).items()]


def make_metric(test_id: str, spec: dict[str, Any], source: str | None = None) -> Metric:
    kind = spec.get("type") if isinstance(spec, dict) else None
    if kind not in (*JUDGED, *CHECKED):
        raise BadInputError(
            f"Promptarchitect test {test_id!r} has an unknown type {kind!r}",
            file=source,
            hint="load the prompt file again (its tests are checked when it is read)",
        )
    info = MetricInfo(
        name=PREFIX + test_id,
        kind="check",
        scorer=_scored(spec),
        description=describe(spec),
        source=source,
    )
    if kind in JUDGED:
        return JUDGED[kind](info, spec=spec)
    return PaCheck(info, spec=spec, judged=False)


def _scored(spec: dict[str, Any]) -> bool:
    """A score test whose threshold is its scale's midpoint passes at an average of 50, as
    every scored metric does; elsewhere each judge's verdict must pass (see verdict_judge)."""
    if spec["type"] != "score":
        return False
    return bool(spec["threshold"] == (spec["min"] + spec["max"]) / 2)


def describe(spec: dict[str, Any]) -> str:
    """One line saying what the test checks, for reports."""
    kind = spec["type"]
    if kind == "question":
        return f"Promptarchitect question (yes passes): {spec['prompt']}"[:300]
    if kind == "score":
        return (
            f"Promptarchitect score from {spec['min']:g} to {spec['max']:g}, passing at "
            f"{spec['threshold']:g}: {spec['prompt']}"
        )[:300]
    if kind == "metric":
        fields = ", ".join(f"{k}={v}" for k, v in spec["input"].items())
        limit = limit_text(spec["limit"]["min"], spec["limit"]["max"])
        return f"Promptarchitect faithfulness ({fields}): {limit}"
    if kind == "property":
        equals = spec["equals"]
        bounds = f"exactly {equals}" if equals is not None else limit_text(spec["min"], spec["max"])
        return f"Promptarchitect property: {bounds} {spec['unit']}"
    if kind == "format":
        return f"Promptarchitect format: {spec['format']}"
    if kind == "language":
        return f"Promptarchitect language: {spec['lang_code']}"
    return f"Promptarchitect keyword (case-sensitive): {spec['keyword']}"
