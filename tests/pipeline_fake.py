"""A responder for the fake server that answers every pipeline stage plausibly.

It routes on the name of the answer schema the gateway sends (`response_format`), never
on the wording of a stage prompt, so rewording a prompt breaks no test here. What an
answer needs (rule labels, how many tests) it reads from that schema; the numbered items
a batch answers are the properties of its schema ("1" .. "N").
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
import threading
import time
from typing import Any

from tests.fakellm import Reply

# Words a fake test input is made of, picked by a hash of where it stands, so that no two
# inputs are near-duplicates (promptgen drops those) and the same request gets the same.
_WORDS = """amber anchor apple arrow autumn badge banjo barley beacon birch blanket bolt bramble
    bridge bucket cactus candle canyon carrot castle cedar chalk cherry cider clover
    comet copper coral cotton crane crystal daisy delta denim desert dingo dolphin
    dragon ember engine falcon fern ferry fiddle flint forest fossil garnet ginger
    glacier granite harbor hazel helmet heron hickory island ivory jasmine jigsaw
    juniper kayak kettle kiwi ladder lantern lemon lilac linen lobster locket magnet
    maple marble meadow mint mosaic nectar needle nickel oasis olive onyx orchid otter
    paddle parrot pebble pepper pillow pine plum pocket quartz quill raven reef ribbon
    river rocket saddle saffron sapphire shovel silver sparrow spruce statue tango
    thistle thunder tiger timber tulip tundra velvet violet walnut whistle willow window
    zephyr zinnia""".split()  # noqa: SIM905


def distinct_words(*parts: Any) -> str:
    digest = hashlib.sha256(json.dumps(parts, default=str).encode()).digest()
    return " ".join(_WORDS[b % len(_WORDS)] for b in digest[:4])


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
        # Evaluation: models under test answer plain text; these shape the verdicts.
        self.failing_models: dict[str, int] = {}  # model -> every k-th call of it fails
        self.bad_word = "VIOLATION"  # outputs with it are judged non-compliant
        self.bad_every = 0  # every k-th output of a model under test holds the bad word
        self.groundtruth_scores: list[int] = [90]  # successive groundtruth scores
        # Or by content: this share of the answers judged scores 40 (hash of the request),
        # the same answer the same score however calls interleave (bench/pipeline.py).
        self.groundtruth_low_share: float | None = None
        # A request with `n` answered with n choices, as OpenAI does (else one choice, as
        # a server that ignores `n`); the benchmarks' server sets it.
        self.honour_n = False
        self.seen: list[dict[str, Any]] = []  # bodies of model-under-test calls
        self.answered: dict[str, int] = {}  # model-under-test calls per model
        self.slow_models: dict[str, float] = {}  # model -> seconds before it answers
        self.log: list[tuple[float, str]] = []  # (arrival time, schema name or model)
        # Number answers by their request's content instead of arrival order: the same
        # request gets the same answer however calls interleave (kill and resume tests).
        self.by_content = False
        # The safety judge: a text holding one of these words is flagged with its label
        # (the prompt, or a numbered test input); everything else is safe.
        self.unsafe_words: dict[str, str] = {"INJECTME": "injection", "HARMME": "harmful"}
        # Stepwise writing: the case each written input was asked for (the class check
        # reads it back), and classes the check reads as another ({"neutral": "positive"}).
        self.written: dict[str, str] = {}
        self.misread: dict[str, str] = {}
        # The intent: hand back the template's example while it shows one (a small model did).
        self.copy_intent_example = False

    def __call__(self, body: dict[str, Any]) -> Reply:
        fmt = body.get("response_format") or {}
        spec = fmt.get("json_schema") or {}
        name = spec.get("name", "text")
        with self._lock:
            self.calls[name] = self.calls.get(name, 0) + 1
            n = next(self._counter)
        if self.by_content:
            key = json.dumps([body.get("model"), body.get("messages"), fmt], sort_keys=True)
            n = int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) % 1_000_000
        with self._lock:
            self.log.append((time.monotonic(), name if name != "text" else str(body["model"])))
        if name == self.fail_stage:
            return Reply(status=500)
        text = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
        if name == "text" and "Output to judge:" in text:  # an inline custom metric
            verdict = "ERR" if self.bad_word in text.rsplit("Output to judge:", 1)[-1] else "OK"
            return Reply(content=f"Checked the output. {verdict}")
        if name == "text":  # no answer schema: a model under test
            return self._under_test(body, text)
        answer = self.answer(name, spec.get("schema", {}), text, n)
        return Reply(content=json.dumps(answer), prompt_tokens=200, completion_tokens=50)

    def answer(self, name: str, schema: dict[str, Any], text: str, n: int) -> Any:
        if name == "IntentAnswer":
            shown = re.search(r'for example "([^"]+)"', text)
            if self.copy_intent_example and shown:
                return {"task_description": shown.group(1)}
            return {"task_description": "Transforms the given input into the requested output."}
        if name in ("InputSpecAnswer", "ShortInputSpecAnswer"):
            return {"constraints": ["Each input is a non-empty string.", "Inputs are English."]}
        if name == "RuleCheckProposal":  # compiled rules: left to the judge
            return {"reason": "a matter of judgement", "check": "none", "argument": ""}
        if name in ("VerdictRubric", "VerdictJudgement"):  # a Verdict-style judge
            return {k: _value_of(v, k) for k, v in schema.get("properties", {}).items()}
        if name == "RulesAnswer":
            return {
                "rules": [
                    f"The output follows requirement number {i}." for i in range(1, self.rules + 1)
                ]
            }
        if name == "RuleFromInstruction":  # stepwise: one instruction, said as a rule
            quoted = re.search(r"Instruction:\n(.*)", text)
            return {"rule": f"The output does what this says: {quoted.group(1) if quoted else ''}"}
        numbers = list(schema.get("properties", {}))  # a numbered answer: "1" .. "N"
        if name == "InverseAnswer":
            answer = {k: f"The output breaks requirement {k} ({n})." for k in numbers}
            if self.copy_first_inverse and numbers:
                self.copy_first_inverse = False
                answer["1"] = re.findall(r"^1\. (.*)$", text, re.M)[0]  # the rule itself
            return answer
        if name == "Grounded":
            return {"grounded": n % 5 != 0, "reason": "stated in the prompt"}
        if name == "Verdicts":
            return {
                k: {"valid": (n + int(k)) % 7 != 0, "reason": "meets the specification"}
                for k in numbers
            }
        if name == "SafetyAnswer":
            return self._safety(text)
        if name == "Screening":
            items = dict(re.findall(r"^(\d+)\. (.*)$", text, re.M))
            return {k: self._safety(items.get(k, "")) for k in numbers}
        if name in ("TestCases", "TestCase", "TestInputs"):
            return self._cases(name, schema, text, n)
        if name == "ClassCheck":
            return {"label": self._class_of(schema, text)}
        if name == "BehavioursAnswer":
            return {
                "behaviours": [
                    {"case": "the input is much longer than usual", "expected_class": None},
                    {"case": "the input mixes two languages", "expected_class": None},
                ]
            }
        if name == "ComplianceVerdict":
            bad = self.bad_word in text  # only an output under test ever holds the word
            rules = re.findall(r"^\d+\. (.*)$", text, re.M)
            return {
                "checks": {
                    str(k): {"broken": bad and k == 1} for k, r in enumerate(rules, start=1)
                },
                "reason": "breaks rule 1: says VIOLATION" if bad else "follows every rule",
                "verdict": "err" if bad else "ok",
            }
        if name == "GroundtruthScore":
            if self.groundtruth_low_share is not None:
                digest = int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)
                score = 40 if digest % 1000 < self.groundtruth_low_share * 1000 else 90
                return {"explanation": f"groundtruth scored {score}", "score": score}
            with self._lock:
                scores = self.groundtruth_scores
                score = scores.pop(0) if len(scores) > 1 else scores[0]
            return {"explanation": f"groundtruth scored {score}", "score": score}
        if name == "ScoreVerdict":
            return {"explanation": "close to the reference", "score": 75}
        if name in ("PaQuestionAnswer", "PaScoreAnswer", "FaithfulnessAnswer"):
            return self._promptarchitect(name, schema, self.bad_word in text)
        if name == "CollectionReview":
            return {
                "failure_modes": [
                    {"description": "Ignores a requirement on long input.", "harm": "high"},
                    {"description": "Answers in the wrong | format.", "harm": "low"},
                ],
                "weaknesses": ["Few tests with unusual input."],
                "quality_score": 7,
                "summary": "Covers every rule once; edge cases are thin.",
            }
        if name == "ImportanceVerdicts":
            return {
                k: {"importance": (n + int(k)) % 10 + 1, "note": f"checks {k}"} for k in numbers
            }
        return {"answer": "ok"}

    def _class_of(self, schema: dict[str, Any], text: str) -> str:
        """The class a written input reads as: the one its case was written for (found
        through the case the writer was given), unless `misread` names another."""
        labels = schema["properties"]["label"]["enum"]
        listed, _, value = text.split("Cases:", 1)[-1].partition("\n\nText:\n")
        case = self.written.get(value.strip(), "")
        lines = dict(re.findall(r"^- (\S+?)(?:: (.*))?$", listed, re.M))
        for label in labels:
            meaning = lines.get(label) or ""
            if (meaning and meaning in case) or f'"{label}"' in case:
                return self.misread.get(label, label)
        return labels[0]

    def _safety(self, text: str) -> dict[str, str]:
        for word, label in self.unsafe_words.items():
            if word.lower() in text.lower():
                return {"reason": f"says {word}", "verdict": label}
        return {"reason": "an ordinary request", "verdict": "safe"}

    def _promptarchitect(self, name: str, schema: dict[str, Any], bad: bool) -> Any:
        """Promptarchitect's judged tests: an output with the bad word fails each of them
        (no, the lowest score, one of two claims unsupported); any other passes."""
        if name == "PaQuestionAnswer":
            return {
                "explanation": "says VIOLATION" if bad else "it does",
                "answer": "no" if bad else "yes",
            }
        if name == "PaScoreAnswer":
            score = _bound(schema["properties"]["score"], "minimum" if bad else "maximum")
            return {"explanation": f"scored {score}", "score": score}
        claims = [{"claim": "the first claim", "supported": True},
                  {"claim": "the second claim", "supported": not bad}]  # fmt: skip
        return {"claims": claims}

    def _under_test(self, body: dict[str, Any], text: str) -> Reply:
        model = str(body.get("model"))
        with self._lock:
            self.seen.append(body)
            self.answered[model] = k = self.answered.get(model, 0) + 1  # not a scan of seen
        if self.by_content:
            k = int(hashlib.sha256(f"{model}\n{text}".encode()).hexdigest()[:8], 16) % 1_000_000
        every = self.failing_models.get(model)
        if every and k % every == 0:
            return Reply(status=400, content="bad request for this cell")
        words = len(text.split())
        bad = f" {self.bad_word}" if self.bad_every and k % self.bad_every == 0 else ""
        answer = f"{model} answer {k} to {words} words{bad}"
        delay = self.slow_models.get(model, 0.0)
        n = int(body.get("n") or 1)
        choices = [f"{answer} (choice {i + 1})" for i in range(n)] if self.honour_n else None
        return Reply(
            content=answer, prompt_tokens=100, completion_tokens=10, delay=delay, choices=choices
        )

    def _cases(self, name: str, schema: dict[str, Any], text: str, n: int) -> Any:
        """Test cases in the shape asked: numbered under each rule label (generation),
        numbered (baseline), or one (expansion). The schema may come with `$defs` or
        inlined (a profile that inlines them, promptgen/llm/shaping.py)."""
        defs = schema.get("$defs", {})

        def resolve(node: dict[str, Any]) -> dict[str, Any]:
            """The schema a `$ref` names, and of a nullable one its non-null branch."""
            if "$ref" in node:
                return resolve(defs[node["$ref"].rsplit("/", 1)[-1]])
            if "anyOf" in node:
                return resolve(next(b for b in node["anyOf"] if b.get("type") != "null"))
            return node

        top = list(schema.get("properties", {}))
        first = resolve(schema["properties"][top[0]]) if top and name != "TestCase" else {}
        numbered = bool(first) and "inputs" not in first.get("properties", {})
        one = schema if name == "TestCase" else first
        if numbered:  # generation: cases numbered under each rule label
            one = resolve(first["properties"]["1"])
        props = resolve(one["properties"]["inputs"])["properties"] if one else {}
        inputs = list(props)

        def value(node: dict[str, Any], text: str, k: int) -> Any:
            """A value of the input's schema: enums picked in turn, types respected."""
            node = resolve(node)
            if "enum" in node:
                return node["enum"][k % len(node["enum"])]
            kind = node.get("type")
            if kind == "array":
                return [value(node.get("items", {}), f"{text} item", k)]
            if kind == "object":
                return {
                    key: value(sub, f"{text} {key}", k) for key, sub in node["properties"].items()
                }
            return {"integer": k, "number": k + 0.5, "boolean": k % 2 == 0}.get(kind, text)

        def case(label: str, k: int) -> dict[str, Any]:
            return {
                "inputs": {
                    i: value(
                        props[i], f"{i} value {n}-{label}-{k} {distinct_words(n, label, k, i)}", k
                    )
                    for i in inputs
                },
                "expected_output": f"expected for {label} #{k}",
                "reasoning": f"targets {label}",
            }

        if name == "TestCase":
            single = case("X", n)
            single["expected_output"] = f"re-derived for the harder input {n}"
            return single
        if name == "TestInputs":  # stepwise: numbered sets of input values only
            asked = re.search(r"in which (.*)\.\s*$", text, re.S)
            out = {}
            for k in range(1, len(top) + 1):
                values = case("W", k - 1)["inputs"]
                for v in values.values():
                    if isinstance(v, str):
                        self.written[v.strip()] = asked.group(1) if asked else ""
                out[str(k)] = {"inputs": values}
            return out
        if not numbered:  # baseline: numbered, no rules
            return {str(k): case("B", k - 1) for k in range(1, len(top) + 1)}
        answer = {}
        for label in top:
            count = len(resolve(schema["properties"][label])["properties"])
            answer[label] = {str(k + 1): case(label, k) for k in range(count)}
        return answer


def _value_of(node: dict[str, Any], name: str) -> Any:
    """A plain value of a field's schema: the top of a scale, the first choice, as many
    items as asked."""
    if "enum" in node:
        return node["enum"][0]
    kind = node.get("type")
    if kind == "array":
        told = re.search(r"at least (\d+) items", node.get("description", ""), re.I)
        count = node.get("minItems") or (int(told.group(1)) if told else 1)
        return [f"{name} {k}" for k in range(1, count + 1)]
    if kind == "integer":
        return _bound(node, "maximum")
    if kind == "boolean":
        return True
    return f"the {name}"


def _bound(node: dict[str, Any], keyword: str) -> float | int:
    """A field's `minimum` or `maximum`, or, where a profile moved it into the field's
    description ("At least 1, at most 5."), read from there."""
    if keyword in node:
        return node[keyword]
    words = "least" if keyword == "minimum" else "most"
    found = re.search(rf"at {words} (-?[0-9.]+)", node.get("description", ""), re.I)
    assert found, node
    value = float(found.group(1).rstrip("."))
    return int(value) if value.is_integer() and node.get("type") == "integer" else value


class DropOnce(PipelineResponder):
    """Leaves item 2 out of the first numbered answer named `name`, like a sloppy model."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name
        self._dropped = threading.Event()

    def answer(self, name: str, schema: dict[str, Any], text: str, n: int) -> Any:
        answer = super().answer(name, schema, text, n)
        if name == self.name and not self._dropped.is_set():
            self._dropped.set()
            answer.pop("2")
        return answer
