"""LLM judges: one call scores one output with one metric on one eval model."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field

from promptgen.checks.metrics import Metric
from promptgen.context import Context
from promptgen.errors import RenderError
from promptgen.llm import LLM
from promptgen.render import render_messages
from promptgen.results import Outcome, Test
from promptgen.stages.common import numbered, prompt_text, stage_messages
from promptgen.stages.invoke import input_text


class RuleCheck(BaseModel):
    rule: str = Field(max_length=300, description="The rule, copied.")
    broken: bool = Field(description="True when the answer breaks this rule.")


class ComplianceVerdict(BaseModel):
    # One check per rule first, then the verdict: the judge walks the rules before it
    # concludes (asked for a verdict at once, a 1.5B judge said "err" to every answer).
    checks: list[RuleCheck] = Field(max_length=60)
    reason: str = Field(max_length=600, description="Which rule is broken, or why none is.")
    verdict: Literal["ok", "err"]


class ScoreVerdict(BaseModel):
    explanation: str = Field(max_length=600)
    score: int = Field(ge=0, le=100)


@dataclass
class Judgement:
    score: float | None = None
    outcome: Outcome = "unknown"
    reason: str | None = None
    error: str | None = None


def judge_values(ctx: Context, test: Test, output: str, groundtruth: str | None) -> dict[str, Any]:
    """What a judge template can read (custom metrics also get the prompt's inputs)."""
    return {
        **test.inputs,
        "prompt": prompt_text(ctx.prompt),
        "intent": ctx.intent or "",
        "inputSpec": ctx.input_spec or "",
        "rules": numbered([r.text for r in ctx.rules]),
        "input": input_text(ctx.prompt, test),
        "output": output,
        "groundtruth": groundtruth or "",
    }


async def judge(
    llm: LLM, metric: Metric, judge_model: str, values: dict[str, Any], stage: str
) -> Judgement:
    kind = metric.info.kind
    if kind in ("compliance", "accuracy", "groundtruth"):  # built-in judges, temperature 0
        messages = stage_messages(kind, **_builtin(values))
        answer = ComplianceVerdict if kind == "compliance" else ScoreVerdict
        result = await llm.complete(
            messages, model=judge_model, output=answer, stage=stage, temperature=0
        )
        return _verdict(result) if kind == "compliance" else _scored(result)
    assert metric.template is not None
    try:
        messages = render_messages(metric.template, values)
    except RenderError as err:
        return Judgement(error=f"metric {metric.name}: {err.one_line()}")
    params = metric.template.model.parameters
    call = {
        "model": judge_model,
        "stage": stage,
        "temperature": params.get("temperature"),
        "max_tokens": params.get("max_tokens"),
    }
    if metric.info.scorer:
        return _scored(await llm.complete(messages, output=ScoreVerdict, **call))
    result = await llm.complete(messages, **call)
    if not result.ok or result.text is None:
        return Judgement(error=result.error or "empty answer")
    outcome, reason = verdict_from_text(result.text)
    return Judgement(score=_points(outcome), outcome=outcome, reason=reason)


def _builtin(values: dict[str, Any]) -> dict[str, Any]:
    """The values the built-in templates use; the test's own inputs stay out (an input
    may be called `name`, like stage_messages' first parameter)."""
    names = ("prompt", "rules", "input", "output", "groundtruth", "intent")
    return {n: values[n] for n in names}


def _points(outcome: Outcome) -> float | None:
    return {"ok": 100.0, "err": 0.0}.get(outcome)


def _verdict(result: Any) -> Judgement:
    if not result.ok:
        return Judgement(error=result.error)
    parsed: ComplianceVerdict = result.parsed
    broken = [c.rule for c in parsed.checks if c.broken]
    # A rule the judge itself marked broken makes the verdict err, whatever it concluded.
    outcome: Outcome = "err" if broken or parsed.verdict == "err" else "ok"
    reason = parsed.reason
    if broken and parsed.verdict == "ok":
        reason = f"broken: {'; '.join(broken)[:400]} ({reason})"
    return Judgement(score=_points(outcome), outcome=outcome, reason=reason)


def _scored(result: Any) -> Judgement:
    if not result.ok:
        return Judgement(error=result.error)
    parsed: ScoreVerdict = result.parsed
    outcome: Outcome = "ok" if parsed.score >= PASS_SCORE else "err"
    return Judgement(score=float(parsed.score), outcome=outcome, reason=parsed.explanation)


# A scored metric passes at 50 or more (as in OpenAI Evals' score_model exports).
PASS_SCORE = 50
_WORD = re.compile(r"\b(OK|ERR|PASS|FAIL)\b", re.IGNORECASE)
_MEANING: dict[str, Outcome] = {"ok": "ok", "pass": "ok", "err": "err", "fail": "err"}


def verdict_from_text(text: str) -> tuple[Outcome, str]:
    """ok/err from a free-text judge: a JSON verdict, else the last OK/ERR-like word."""
    stripped = text.strip()
    try:
        data = json.loads(stripped)
    except json.JSONDecodeError:
        data = None
    if isinstance(data, dict):
        for key in ("verdict", "result", "answer", "outcome"):
            value = str(data.get(key, "")).strip().lower()
            if value in _MEANING:
                reason = data.get("reason") or data.get("explanation") or stripped
                return _MEANING[value], str(reason)[:600]
    words = _WORD.findall(stripped)
    if not words:
        return "unknown", stripped[:600]
    return _MEANING[words[-1].lower()], stripped[:600]
