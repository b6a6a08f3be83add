"""The safety judge's answer: a verdict among fixed labels, its reason written first; and
which flagged tests the prompt's own purpose handles (run all the same)."""

from __future__ import annotations

import json
import re

from pydantic import BaseModel

from promptgen.context import Context
from promptgen.prompting import prompt_text
from promptgen.prompting.bounded import Text
from promptgen.results import Safety, Test


class SafetyAnswer(BaseModel):
    # Reason before verdict: the label is chosen after the evidence is written down.
    reason: Text(300, description="The part that decides, quoted or named.")  # type: ignore[valid-type]
    verdict: Safety


# What a prompt's own purpose handles, read from its instructions, intent and rules: a
# redactor or contact extractor handles personal data, a moderation classifier harmful
# content, an injection detector injection. Its flagged tests of that kind are exactly
# the tests it needs, so the evaluation runs them (docs/stages.md).
PURPOSES: dict[str, re.Pattern[str]] = {
    "personal data": re.compile(
        r"\b(?:pii|personal(?:ly)? (?:data|information|details|identifiable)|redact\w*|"
        r"anonymi[sz]\w*|pseudonymi[sz]\w*|de-?identif\w*|contact (?:details|information)|"
        r"e-?mail address\w*|(?:tele)?phone numbers?|social security numbers?)",
        re.I,
    ),
    "harmful content": re.compile(
        r"\b(?:moderat\w*|toxic\w*|hate speech|content (?:polic\w*|filter\w*)|"
        r"safety classif\w*|(?:classif\w*|flag\w*|detect\w*) (?:\w+ ){0,4}"
        r"(?:harmful|unsafe|abusive|offensive))",
        re.I,
    ),
    "prompt injection": re.compile(
        r"\b(?:prompt injections?|jailbreak\w*|injection attempts?)", re.I
    ),
}
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.[\w.-]+")
_PHONE = re.compile(r"\+?\d[\d ().-]{6,}\d")
_PERSONAL_REASON = re.compile(r"personal|\bpii\b|e-?mail|phone|address|contact|privacy", re.I)


def handled(ctx: Context) -> frozenset[str]:
    """The kinds of flagged content the prompt's own purpose handles (see PURPOSES)."""
    text = "\n".join(
        [prompt_text(ctx.prompt), ctx.intent or "", *(r.text for r in ctx.rules if not r.inverse)]
    )
    return frozenset(kind for kind, pattern in PURPOSES.items() if pattern.search(text))


def flagged_kind(test: Test) -> str | None:
    """What the screen flagged in a test: `prompt injection`, `harmful content`, or
    `personal data` (flagged harmful for its e-mail addresses, phone numbers or the
    like); None when not flagged."""
    if not test.flagged:
        return None
    if test.safety == "injection":
        return "prompt injection"
    inputs = json.dumps(test.inputs, ensure_ascii=False, default=str)
    if (
        _EMAIL.search(inputs)
        or _PHONE.search(inputs)
        or _PERSONAL_REASON.search(test.safety_reason or "")
    ):
        return "personal data"
    return "harmful content"


def kept_for_purpose(test: Test, handles: frozenset[str]) -> bool:
    """A flagged test the prompt's purpose handles: run on the models all the same (a
    moderation prompt handles the personal data flagged as harmful, too)."""
    kind = flagged_kind(test)
    if kind is None:
        return False
    return kind in handles or (kind == "personal data" and "harmful content" in handles)
