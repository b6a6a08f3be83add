"""A responder for the fake server that answers every pipeline stage plausibly.

It reads the structured-output schema the gateway sends (`response_format`) and the
rule labels in the prompt, and writes schema-valid answers with distinct test inputs,
so the whole pipeline can run against real HTTP without a real model.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from typing import Any

from tests.fakellm import Reply


class PipelineResponder:
    def __init__(
        self, rules: int = 4, fail_stage: str | None = None, copy_first_inverse: bool = False
    ) -> None:
        self.rules = rules
        self.fail_stage = fail_stage
        self.copy_first_inverse = copy_first_inverse  # answer rule 1 with the rule itself once
        self._counter = itertools.count(1)
        self._lock = threading.Lock()
        self.calls: dict[str, int] = {}

    def __call__(self, body: dict[str, Any]) -> Reply:
        fmt = body.get("response_format") or {}
        spec = fmt.get("json_schema") or {}
        name = spec.get("name", "text")
        with self._lock:
            self.calls[name] = self.calls.get(name, 0) + 1
            n = next(self._counter)
        if name == self.fail_stage:
            return Reply(status=500)
        text = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
        answer = self.answer(name, spec.get("schema", {}), text, n)
        return Reply(content=json.dumps(answer), prompt_tokens=200, completion_tokens=50)

    def answer(self, name: str, schema: dict[str, Any], text: str, n: int) -> Any:
        if name == "IntentAnswer":
            return {"task_description": "Transforms the given input into the requested output."}
        if name == "InputSpecAnswer":
            return {"constraints": ["Each input is a non-empty string.", "Inputs are English."]}
        if name == "RulesAnswer":
            return {
                "rules": [
                    f"The output follows requirement number {i}." for i in range(1, self.rules + 1)
                ]
            }
        if name == "InverseAnswer":
            found = re.findall(r"^(\d+)\. (.*)$", text, re.M)
            items = [
                {"number": int(k), "inverse": f"The output breaks requirement {k} ({n})."}
                for k, _ in found
            ]
            if self.copy_first_inverse and items:
                self.copy_first_inverse = False
                items[0]["inverse"] = found[0][1]
            return {"inverse_rules": items}
        if name == "Grounded":
            return {"grounded": n % 5 != 0, "reason": "stated in the prompt"}
        if name == "Verdicts":
            numbers = [int(m) for m in re.findall(r"^(\d+)\. \{", text, re.M)]
            return {
                "verdicts": [
                    {"number": k, "valid": (n + k) % 7 != 0, "reason": "meets the specification"}
                    for k in numbers
                ]
            }
        if name in ("TestCases", "TestCase"):
            return self._cases(name, schema, text, n)
        return {"answer": "ok"}

    def _cases(self, name: str, schema: dict[str, Any], text: str, n: int) -> Any:
        defs = schema.get("$defs", {})
        inputs = list(defs.get("Inputs", {}).get("properties", {}))
        count_match = re.search(r"Write (\d+) (?:test case|varied test)", text)
        count = int(count_match.group(1)) if count_match else 1
        labels = re.findall(r"^([RI]\d+)\. ", text, re.M) or ["R1"]

        def case(label: str, k: int) -> dict[str, Any]:
            case = {
                "inputs": {i: f"{i} value {n}-{label}-{k}" for i in inputs},
                "expected_output": f"expected for {label} #{k}",
                "reasoning": f"targets {label}",
            }
            if "rule" in schema.get("$defs", {}).get("TestCase", {}).get("properties", {}):
                case = {"rule": label, **case}
            return case

        if name == "TestCase":
            single = case("X", n)
            single.pop("rule", None)
            single["expected_output"] = f"re-derived for the harder input {n}"
            return single
        if "I1" not in text and "R1" not in text:  # baseline: no rules
            return {"tests": [case("B", k) for k in range(count)]}
        return {"tests": [case(label, k) for label in labels for k in range(count)]}
