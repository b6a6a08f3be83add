"""The judged Promptarchitect tests: question (yes/no), score (a number in [min, max],
passing at the threshold) and metric/faithfulness (the answer's claims, each supported
by the context or not). Each asks one eval model with a structured answer, at
temperature 0; every eval model of the run judges (`case.judge`).

Faithfulness = supported claims / claims, from 0 to 1; an answer with no claim scores 1
(there is nothing unfaithful in it). Verdict scores are 0-100: a score test maps
[min, max] onto it linearly, faithfulness is the share times 100.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field, create_model

from promptgen.evaluation.protocol import Case, MetricBase, Verdict
from promptgen.llm import Completion
from promptgen.prompting import stage_messages
from promptgen.prompting.bounded import Items, Text
from promptgen.results import Outcome

MAX_CLAIMS = 40


class PaQuestionAnswer(BaseModel):
    explanation: Text(600, description="What in the answer decides the question.")  # type: ignore[valid-type]
    answer: Literal["yes", "no"]


@functools.lru_cache(maxsize=64)
def score_answer(low: float, high: float) -> type[BaseModel]:
    """A score from `low` to `high`: a whole number when both bounds are whole."""
    whole = float(low).is_integer() and float(high).is_integer()
    kind: Any = int if whole else float
    bounds = (int(low), int(high)) if whole else (low, high)
    return create_model(
        "PaScoreAnswer",
        explanation=(Text(600, description="Why this score."), ...),
        score=(kind, Field(ge=bounds[0], le=bounds[1])),
    )


class Claim(BaseModel):
    claim: Text(300, description="One statement of fact the answer makes.")  # type: ignore[valid-type]
    supported: bool = Field(description="True when the context states it or it follows from it.")


class FaithfulnessAnswer(BaseModel):
    claims: Items(Claim, MAX_CLAIMS, description="Every claim of the answer, in order.")  # type: ignore[valid-type]


async def _ask(case: Case, messages: Any, output: type[BaseModel]) -> Completion:
    if case.llm is None or case.judge is None:
        raise ValueError("a judged metric needs a case with a gateway and an eval model")
    return await case.llm.complete(
        messages, model=case.judge, output=output, stage=case.stage, temperature=0
    )


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


@dataclass
class PaQuestionJudge(MetricBase):
    """ok when the judge answers yes to the test's question about the output."""

    spec: dict[str, Any]

    async def evaluate(self, case: Case) -> Verdict:
        messages = stage_messages(
            "pa_question",
            question=self.spec["prompt"],
            input=case.values.get("input", ""),
            output=case.output,
        )
        result = await _ask(case, messages, PaQuestionAnswer)
        if not result.ok:
            return Verdict(error=result.error)
        parsed: Any = result.parsed
        outcome: Outcome = "ok" if parsed.answer == "yes" else "err"
        return Verdict.of(outcome, f"{parsed.answer}: {parsed.explanation}")


@dataclass
class PaScoreJudge(MetricBase):
    """A score in [min, max]; passes at the threshold or above. The verdict's score maps
    [min, max] onto 0-100; its outcome follows the threshold, wherever it lies."""

    spec: dict[str, Any]

    async def evaluate(self, case: Case) -> Verdict:
        low, high, threshold = self.spec["min"], self.spec["max"], self.spec["threshold"]
        messages = stage_messages(
            "pa_score",
            instruction=self.spec["prompt"],
            input=case.values.get("input", ""),
            output=case.output,
            low=_number(low),
            high=_number(high),
        )
        result = await _ask(case, messages, score_answer(low, high))
        if not result.ok:
            return Verdict(error=result.error)
        parsed: Any = result.parsed
        value = parsed.score
        scaled = 100.0 * (value - low) / (high - low)
        reason = f"scored {_number(value)} of {_number(low)}-{_number(high)}, passes at "
        reason += f"{_number(threshold)}; {parsed.explanation}"
        outcome: Outcome = "ok" if value >= threshold else "err"
        return Verdict(score=round(scaled, 2), outcome=outcome, reason=reason[:600])


@dataclass
class FaithfulnessJudge(MetricBase):
    """The share of the answer's claims that the context supports, from 0 to 1; passes
    within the test's limit. `question`, `answer` and `context` are the test's fields:
    `input` (the sample's body), `output` (the model's output) or a sample property."""

    spec: dict[str, Any]

    async def evaluate(self, case: Case) -> Verdict:
        values, missing = self._values(case)
        if missing is not None:
            return Verdict(outcome="unknown", reason=missing)
        messages = stage_messages("faithfulness", **values)
        result = await _ask(case, messages, FaithfulnessAnswer)
        if not result.ok:
            return Verdict(error=result.error)
        claims = list(getattr(result.parsed, "claims", []))
        low, high = self.spec["limit"]["min"], self.spec["limit"]["max"]
        limit = f"limit {limit_text(low, high)}"
        if not claims:
            share, reason = 1.0, f"the answer makes no claim to check: 1 ({limit})"
        else:
            supported = sum(c.supported for c in claims)
            share = supported / len(claims)
            reason = f"{supported} of {len(claims)} claims supported: {share:.2f} ({limit})"
            unsupported = [c.claim for c in claims if not c.supported]
            if unsupported:
                reason += "; not supported: " + "; ".join(unsupported[:3])
        passed = (low is None or share >= low) and (high is None or share <= high)
        return Verdict(
            score=round(100.0 * share, 2), outcome="ok" if passed else "err", reason=reason[:600]
        )

    def _values(self, case: Case) -> tuple[dict[str, str], str | None]:
        """question, answer and context as text, or why this test cannot give them."""
        values = {"question": ""}
        for key, name in self.spec["input"].items():
            if name == "output":
                values[key] = case.output
            elif name in case.arguments:
                values[key] = _text(case.arguments[name])
            else:
                return {}, f"the test gives no '{name}' (read as input.{key})"
        return values, None


def _number(value: float) -> str:
    return f"{value:g}"


def limit_text(low: float | None, high: float | None) -> str:
    """`0.5 to 1`, `at least 0.8`, `at most 0.9`."""
    if low is not None and high is not None:
        return f"{low:g} to {high:g}"
    return f"at least {low:g}" if low is not None else f"at most {high:g}"
