"""The safety judge's answer: a verdict among fixed labels, its reason written first."""

from __future__ import annotations

from pydantic import BaseModel

from promptgen.prompting.bounded import Text
from promptgen.results import Safety


class SafetyAnswer(BaseModel):
    # Reason before verdict: the label is chosen after the evidence is written down.
    reason: Text(300, description="The part that decides, quoted or named.")  # type: ignore[valid-type]
    verdict: Safety
