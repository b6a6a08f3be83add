"""LLM judges: the built-in compliance and score judges, and template judges
(`*.metric.prompty` files, `--custom-metric` text). One call scores one output."""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field, create_model

from promptgen.errors import RenderError
from promptgen.evaluation.protocol import Case, MetricBase, Verdict
from promptgen.llm import Completion
from promptgen.model import PromptUnderTest
from promptgen.prompting import stage_messages
from promptgen.prompting.bounded import Text
from promptgen.prompting.per_item import answers, numbered_model
from promptgen.rendering.render import render_messages, template_variables
from promptgen.results import Outcome

# What the analysis stages make, as judge templates name it.
ANALYSIS_VALUES = ("intent", "inputSpec", "rules")


# One rule's check, under the rule's number; the number names the rule (no docstring:
# it would go to the model as the schema's description). The judge copied each rule
# here before: the README run's 28 judgements wrote 3,770 tokens with the copies and
# 1,606 without, and on 14 labelled answers the 1.5B judge gave the same verdicts
# either way (docs/performance.md).
class RuleCheck(BaseModel):
    broken: bool = Field(description="True when the answer breaks the rule of this number.")


_OkErr = Literal["ok", "err"]  # the judge's verdict


@functools.lru_cache(maxsize=64)
def compliance_verdict(rules: int) -> type[BaseModel]:
    """The compliance answer for `rules` numbered rules: one check under each rule's
    number (a schema-following server can neither skip a rule nor invent one), then the
    reason and the verdict. The judge walks the rules before it concludes (asked for a
    verdict at once, a 1.5B judge said "err" to every answer)."""
    checks = numbered_model("RuleChecks", rules, RuleCheck)
    reason = Text(600, description="Which rule is broken, or why none is.")
    return create_model(
        "ComplianceVerdict",
        checks=(checks, ...),
        reason=(reason, ...),
        verdict=(_OkErr, ...),
    )


def rule_count(rules: str) -> int:
    """How many rules a numbered list ("1. ...", "2. ...") holds."""
    return max(numbered_rules(rules), default=0)


def numbered_rules(rules: str) -> dict[int, str]:
    """Number -> rule text of a numbered list ("1. ...", "2. ...")."""
    return {int(n): text.strip() for n, text in _RULE_LINE.findall(rules)}


class ScoreVerdict(BaseModel):
    explanation: Text(600)  # type: ignore[valid-type]
    score: int = Field(ge=0, le=100)


class GroundtruthScore(ScoreVerdict):
    """A score of a groundtruth answer (its own schema name, so a server or a log can
    tell it from an accuracy score)."""


# The values the built-in templates use; a test's own inputs stay out (an input may be
# called `name`, like stage_messages' first parameter).
_BUILTIN_VALUES = ("prompt", "rules", "input", "output", "groundtruth", "intent")


def _builtin_values(case: Case) -> dict[str, Any]:
    return {n: case.values.get(n, "") for n in _BUILTIN_VALUES}


async def _ask(
    case: Case, messages: Any, output: type[BaseModel] | None, **params: Any
) -> Completion:
    if case.llm is None or case.judge is None:
        raise ValueError("a judged metric needs a case with a gateway and an eval model")
    return await case.llm.complete(
        messages, model=case.judge, output=output, stage=case.stage, **params
    )


@dataclass
class ComplianceJudge(MetricBase):
    """Reads the prompt, its rules, the input and the output; answers ok or err."""

    async def evaluate(self, case: Case) -> Verdict:
        messages = stage_messages("compliance", **_builtin_values(case))
        answer = compliance_verdict(rule_count(str(case.values.get("rules", ""))))
        result = await _ask(case, messages, answer, temperature=0)
        if not result.ok:
            return Verdict(error=result.error)
        parsed: Any = result.parsed
        texts = numbered_rules(str(case.values.get("rules", "")))
        checks = sorted(answers(parsed.checks).items())
        broken = [texts.get(n, f"rule {n}") for n, c in checks if c.broken]
        # A rule the judge itself marked broken makes the verdict err, whatever it concluded.
        outcome: Outcome = "err" if broken or parsed.verdict == "err" else "ok"
        reason = parsed.reason
        if broken and parsed.verdict == "ok":
            reason = f"broken: {'; '.join(broken)[:400]} ({reason})"
        return Verdict.of(outcome, reason)


@dataclass
class ScoreJudge(MetricBase):
    """A built-in 0-100 judge: `accuracy` (output against the groundtruth) or
    `groundtruth` (how good a groundtruth answer is)."""

    async def evaluate(self, case: Case) -> Verdict:
        answer = GroundtruthScore if self.scores_groundtruth else ScoreVerdict
        messages = stage_messages(self.info.kind, **_builtin_values(case))
        return _scored(await _ask(case, messages, answer, temperature=0))


@dataclass
class TemplateJudge(MetricBase):
    """A judge written as a prompt template: ok/err from its last OK/ERR word, or a
    structured 0-100 score when tagged `scorer`."""

    template: PromptUnderTest

    def __post_init__(self) -> None:
        engine = self.template.template_engine
        names = {v for m in self.template.messages for v in template_variables(m.content, engine)}
        self.reads_analysis = bool(names & set(ANALYSIS_VALUES))

    async def evaluate(self, case: Case) -> Verdict:
        try:
            messages = render_messages(self.template, dict(case.values))
        except RenderError as err:
            return Verdict(error=f"metric {self.name}: {err.one_line()}")
        params = self.template.model.parameters
        call = {"temperature": params.get("temperature"), "max_tokens": params.get("max_tokens")}
        if self.info.scorer:
            return _scored(await _ask(case, messages, ScoreVerdict, **call))
        result = await _ask(case, messages, None, **call)
        if not result.ok or result.text is None:
            return Verdict(error=result.error or "empty answer")
        return Verdict.of(*verdict_from_text(result.text))


def _scored(result: Completion) -> Verdict:
    if not result.ok:
        return Verdict(error=result.error)
    parsed: ScoreVerdict = result.parsed
    return Verdict.scored(float(parsed.score), parsed.explanation)


_RULE_LINE = re.compile(r"^(\d+)\. (.*)$", re.M)
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
