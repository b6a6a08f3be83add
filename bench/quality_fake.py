"""A scripted large-model fake for bench/quality.py: answers as a capable model would.

It extends the tests' pipeline responder (which routes on the answer schema's name) with
the answers that decide the quality figures, computed from the request's own text:

- rules (`RulesAnswer`): every sentence of the prompt under test that gives an order
  (starts with a verb of the usual instruction kind, or says must/never/always/do not),
  written as "The output follows the instruction: ...", at most the number asked for;
- groundedness (`Grounded`): grounded when most of the rule's words are in the prompt;
- validity (`Verdicts`): every test valid;
- the recall judge (`Covers`): covered when the rule holds at least a third of the
  instruction's words.

A stand-in for a large hosted model where the benchmark may not reach one: the figures it
gives show whether a change made the pipeline worse for a model that answers well, not
how good any real model is.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.fakellm import FakeLLM
from tests.pipeline_fake import PipelineResponder

_VERBS = set(
    re.findall(
        r"\S+",
        """answer reply respond write use keep include start end list rate return give
        translate summarize label judge leave copy quote group rewrite make add put
        avoid follow output do don't never always only""",
    )
)


def _words(text: str) -> set[str]:
    return {w[:5] for w in re.findall(r"[a-z]+", text.lower()) if len(w) > 3}


def _prompt(text: str) -> str:
    found = re.findall(r"<PROMPT>(.*?)</PROMPT>", text, re.S)  # the system text names the tags
    return max(found, key=len) if found else text


def _orders(prompt: str) -> list[str]:
    sentences = re.split(r"(?<=[.!?])\s+|\n\s*[-*]\s+|\n\n", prompt)
    out = []
    for sentence in sentences:
        s = " ".join(sentence.split())
        first = (re.findall(r"[a-z']+", s.lower()) or [""])[0]
        if len(s) > 12 and (first in _VERBS or re.search(r"\b(must|never|always|do not)\b", s)):
            out.append(s)
    return out


class LargeModelResponder(PipelineResponder):
    def answer(self, name: str, schema: dict[str, Any], text: str, n: int) -> Any:
        if name == "RulesAnswer":
            limit = re.search(r"at most (\d+)", text)
            orders = _orders(_prompt(text))[: int(limit.group(1)) if limit else None]
            rules = [f"The output follows the instruction: {o}"[:290] for o in orders]
            return {"rules": rules}
        if name == "Grounded":
            rule = re.search(r"Rule:\s*(.*)", text)
            said = _words(rule.group(1) if rule else "")
            share = len(said & _words(_prompt(text))) / len(said) if said else 0
            return {"grounded": share >= 0.5, "reason": f"{share:.0%} of its words"}
        if name == "Verdicts":
            numbers = list(schema.get("properties", {}))
            return {k: {"valid": True, "reason": "meets the specification"} for k in numbers}
        if name == "Covers":
            instruction = re.search(r"Instruction:\s*(.*)", text)
            rule = re.search(r"Rule:\s*(.*)", text)
            wanted = _words(instruction.group(1) if instruction else "")
            got = _words(rule.group(1) if rule else "")
            share = len(wanted & got) / len(wanted) if wanted else 0
            return {"reason": f"{share:.0%} of the words", "covers": share >= 1 / 3}
        return super().answer(name, schema, text, n)


def start_fake() -> FakeLLM:
    return FakeLLM(responder=LargeModelResponder()).start()
