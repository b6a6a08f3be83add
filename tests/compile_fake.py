"""A pipeline responder for compiled-rule tests: the compliance judge counts sentences
(an answer of more than two is non-compliant), and the rules model answers each rule's
check proposal from a script keyed by a phrase of the rule."""

from __future__ import annotations

import re
from typing import Any

from promptgen.evaluation.checks import _COUNTERS
from tests.fakellm import Reply
from tests.pipeline_fake import PipelineResponder

TWO_SENTENCES = "The answer is at most 2 sentences."
HELLO = "The answer starts with Hello."
POLITE = "The answer is polite."
SHORT_WORDS = "The answer uses short words."

# Rule text -> (check, argument, reason) the rules model proposes.
PROPOSALS: dict[str, tuple[str, str, str]] = {
    TWO_SENTENCES: ("sentence-count", '{"max": 2}', "a count of sentences"),
    HELLO: ("starts-with", "Hello", "the first word"),
    POLITE: ("regex", "([a-z", "a pattern for polite words"),  # does not compile
    SHORT_WORDS: ("none", "", "a matter of judgement"),
}


class CompilingResponder(PipelineResponder):
    def __init__(self, rules: list[str] | None = None, **options: Any) -> None:
        super().__init__(**options)
        self.rule_texts = rules or [TWO_SENTENCES, HELLO]
        self.fail_rule: str | None = None  # the proposal for this rule answers HTTP 500

    def __call__(self, body: dict[str, Any]) -> Reply:
        last = str(body.get("messages", [{}])[-1].get("content", ""))
        if self.fail_rule and last.rstrip().endswith(f"Rule: {self.fail_rule}"):
            return Reply(status=500)
        return super().__call__(body)

    def answer(self, name: str, schema: dict[str, Any], text: str, n: int) -> Any:
        if name == "RulesAnswer":
            return {"rules": self.rule_texts}
        if name == "RuleCheckProposal":
            rule = text.rsplit("Rule:", 1)[-1].strip()
            check, argument, reason = PROPOSALS[rule]
            return {"reason": reason, "check": check, "argument": argument}
        if name == "ComplianceVerdict":
            answer = text.rsplit("<ANSWER>", 1)[-1].rsplit("</ANSWER>", 1)[0].strip()
            bad = _COUNTERS["sentences"](answer) > 2
            rules = re.findall(r"^\d+\. (.*)$", text, re.M)
            return {
                "checks": {
                    str(k): {"broken": bad and r == TWO_SENTENCES}
                    for k, r in enumerate(rules, start=1)
                },
                "reason": "more than two sentences" if bad else "follows every rule",
                "verdict": "err" if bad else "ok",
            }
        return super().answer(name, schema, text, n)
