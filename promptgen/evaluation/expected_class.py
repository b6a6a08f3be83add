"""The `expected_class` check: does the output give the class its test expects?

A test written for an output class the prompt names ("negative", "CANNOT_ANSWER", a
score of 1) carries that class as `expected_class` when it can be trusted (a check call
sorted the input into it, a large writer wrote it, or the prompt dictates the answer for
the case). Without a groundtruth nothing else compares the output with it, and a small
compliance judge passed a "positive" for a mixed review; this check does, with no model
call. It only applies to tests with an expected class.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from promptgen.evaluation.protocol import Case, Metric, MetricBase, Verdict
from promptgen.model import PromptUnderTest
from promptgen.options import Options
from promptgen.results import CLASS_CHECK, MetricInfo

LOAD_ORDER = 5  # last: a check of every run, shown where a test expects a class

# Decoration around a label: quotes, emphasis, code marks, a trailing full stop.
_DECOR = "\"'`*_ \t\n."
# A short lead-in before the label on the first line ("Sentiment: negative").
_LEAD = re.compile(r"^[A-Za-z][\w ]{0,30}:\s*")


def gives_class(output: str, label: str) -> tuple[bool, str]:
    """Whether `output` gives `label`, and what the output gave where it does not.

    The output gives the label when, case aside, it is the label; begins with it
    followed by something that is not part of a word ("feat(parser): ...",
    "negative.", "1 - unusable"); does so after a short lead-in ("Sentiment: mixed");
    or is JSON equal to a JSON label ("[]"), or an object with a top-level value equal
    to the label ({"score": 1, ...})."""
    text = output.strip()
    parsed = _json(text)
    wanted = _json(label.strip())
    if parsed is not None:
        if wanted is not None and parsed == wanted:
            return True, ""
        if isinstance(parsed, dict):
            values = [v for v in parsed.values() if isinstance(v, str | int | float)]
            if any(_same(str(v), label) for v in values):
                return True, ""
            return False, json.dumps(parsed, ensure_ascii=False)[:80]
    first = text.splitlines()[0].strip(_DECOR) if text else ""
    for line in (first, _LEAD.sub("", first).strip(_DECOR)):
        if _starts(line, label):
            return True, ""
    return False, first[:80]


def _json(text: str) -> Any:
    if not text or text[0] not in "[{":
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def _same(value: str, label: str) -> bool:
    return value.strip(_DECOR).casefold() == label.strip(_DECOR).casefold()


def _starts(line: str, label: str) -> bool:
    label = label.strip(_DECOR)
    if not label or not line.casefold().startswith(label.casefold()):
        return False
    rest = line[len(label) :]
    return not rest or not (rest[0].isalnum() or rest[0] == "_")


@dataclass
class ExpectedClass(MetricBase):
    """Pass when the output gives the test's expected class; only tests with one."""

    def __post_init__(self) -> None:
        self.judged = False  # no model call
        self.needs_class = True

    async def evaluate(self, case: Case) -> Verdict:
        label = case.test.expected_class
        if not label:
            return Verdict(outcome="unknown", reason="the test expects no class")
        ok, gave = gives_class(case.output, label)
        if ok:
            return Verdict.of("ok", f"gives {label!r}")
        said = f"the output starts {gave!r}" if gave else "the output is empty"
        return Verdict.of("err", f"expected {label!r}; {said}")


def metrics(prompt: PromptUnderTest, options: Options) -> list[Metric]:
    """On with the compliance judge, whose blind spot it covers (`--no-compliance` turns
    both off): it costs no call, and a test without an expected class never asks it."""
    if not options.evaluation.compliance:
        return []
    info = MetricInfo(
        name=CLASS_CHECK,
        kind="check",
        description="The output gives the class its test expects (deterministic; only "
        "tests written for an output class).",
    )
    return [ExpectedClass(info)]
