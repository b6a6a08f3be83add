"""What a run produces: rules, tests, runs, scores, usage and per-stage records.

Ids are content hashes, so the same rule or test gets the same id in every run and
resume can join finished work without duplicating or losing anything.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_serializer

from promptgen.secrets import scrub

TestOrigin = Literal["generated", "expanded", "sample", "baseline"]
StageStatus = Literal["pending", "running", "done", "failed", "skipped", "interrupted"]
Outcome = Literal["ok", "err", "unknown"]
# A reply that is not a whole answer: empty (or only whitespace), or cut off at the
# token limit (finish_reason "length"). Recorded, never judged, asked again on a re-run.
Fault = Literal["empty", "truncated"]
# The safety judge's verdict on the prompt under test or on one test's inputs.
Safety = Literal["safe", "injection", "harmful"]


def content_id(prefix: str, *parts: Any) -> str:
    """A short stable id from the canonical JSON of `parts`."""
    blob = json.dumps(parts, sort_keys=True, ensure_ascii=False, default=str)
    return f"{prefix}-{hashlib.sha256(blob.encode()).hexdigest()[:12]}"


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _scrubbed(value: str | None) -> str | None:
    """Error text as written out: keys a provider quoted are blanked (the gateway already
    scrubs its errors; this is the last line of defence, docs/llm.md)."""
    return None if value is None else scrub(value)


class Usage(_Record):
    """Token, cost and call counts; add them up with `+`."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    calls: int = 0
    cache_hits: int = 0
    latency_ms: float = 0.0
    cached_tokens: int = Field(
        0,
        description="Prompt tokens the model reused from its own cache instead of reading "
        "them again (a provider's usage.prompt_tokens_details.cached_tokens; the embedded "
        "model's prefix kept from its previous call). Part of prompt_tokens.",
    )

    def __add__(self, other: Usage) -> Usage:
        return Usage(**{k: getattr(self, k) + getattr(other, k) for k in Usage.model_fields})

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class UsageTotals(_Record):
    total: Usage = Field(default_factory=Usage)
    by_model: dict[str, Usage] = Field(default_factory=dict)
    by_stage: dict[str, Usage] = Field(default_factory=dict)

    def __add__(self, other: UsageTotals) -> UsageTotals:
        def merged(a: dict[str, Usage], b: dict[str, Usage]) -> dict[str, Usage]:
            return {k: a.get(k, Usage()) + b.get(k, Usage()) for k in {*a, *b}}

        return UsageTotals(
            total=self.total + other.total,
            by_model=merged(self.by_model, other.by_model),
            by_stage=merged(self.by_stage, other.by_stage),
        )


class Rule(_Record):
    """An output rule, or (inverse=True) its negation, linked by `inverse_of`."""

    id: str
    text: str
    inverse: bool = False
    inverse_of: str | None = Field(None, description="Id of the rule this one negates.")
    grounded: bool | None = None
    grounded_reason: str | None = None
    source: str | None = Field(
        None,
        description="The prompt's instruction the rule was read from (stepwise), as written.",
    )

    @classmethod
    def make(cls, text: str, *, inverse_of: str | None = None, source: str | None = None) -> Rule:
        prefix = "inv" if inverse_of else "rule"
        return cls(
            id=content_id(prefix, text.strip(), inverse_of),
            text=text.strip(),
            inverse=inverse_of is not None,
            inverse_of=inverse_of,
            source=source,
        )


BehaviourKind = Literal[
    "class", "condition", "criterion", "content", "temptation", "guidance", "variety", "model"
]  # fmt: skip


class Behaviour(_Record):
    """Something a good suite must exercise: an output class the prompt names, a condition
    or exception it states, a criterion it applies, what an instruction acts on (the
    phone numbers "Keep phone numbers exactly as written" keeps), a prohibition's
    temptation, a case the author's guidance names, or a boundary or hostile input. Tests record the
    behaviours they exercise (`Test.behaviours`)."""

    id: str
    kind: BehaviourKind
    text: str = Field(description="The case, said of the input: 'the customer is mostly unhappy'.")
    source: str | None = Field(
        None, description="The prompt's (or guidance's) words it comes from."
    )
    expected_class: str | None = Field(
        None, description="The class or label a correct output gives for such an input."
    )
    expected_output: str | None = Field(
        None, description="The whole output, where the prompt dictates it ('[]', 'negative')."
    )
    inputs: dict[str, Any] = Field(
        default_factory=dict, description="Input values the case fixes (an empty message, a flag)."
    )
    appended: dict[str, str] = Field(
        default_factory=dict,
        description="Text added to the end of a written input (a hostile instruction).",
    )

    @property
    def suffix(self) -> bool:
        return bool(self.appended)

    @classmethod
    def make(cls, kind: BehaviourKind, text: str, **fields: Any) -> Behaviour:
        text = " ".join(text.split())
        inputs = fields.get("inputs") or {}
        return cls(id=content_id("beh", kind, text, inputs), kind=kind, text=text, **fields)


class Test(_Record):
    """One test case: inputs for the prompt, what it targets, and what is expected."""

    __test__ = False  # not a pytest class

    id: str
    rule_id: str | None = None
    inverse: bool = False
    scenario: str | None = None
    inputs: dict[str, Any] = Field(default_factory=dict)
    expected_output: str | None = None
    expected_class: str | None = Field(
        None, description="The class or label the prompt makes a correct output give."
    )
    behaviours: list[str] = Field(
        default_factory=list, description="Ids of the behaviours the test exercises."
    )
    reasoning: str | None = None
    generation: int = 0
    origin: TestOrigin = "generated"
    parent_id: str | None = Field(None, description="For expanded tests: the test expanded.")
    original_inputs: dict[str, Any] | None = None
    valid: bool | None = None
    validity_reason: str | None = None
    groundtruth: str | None = None
    groundtruth_model: str | None = None
    groundtruth_score: float | None = None
    # ok: the groundtruth model's answer was accepted; invalid: no answer was (no
    # reference); author: a test sample's expected output, taken as is (no model asked).
    groundtruth_status: Literal["ok", "invalid", "author"] | None = None
    safety: Safety | None = Field(
        None,
        description="The safety judge's verdict on the inputs; a flagged test (injection, "
        "harmful) is not run on the models unless keepUnsafe.",
    )
    safety_reason: str | None = None

    @property
    def has_reference(self) -> bool:
        """An output of this test can be scored for accuracy against `groundtruth`."""
        return self.groundtruth is not None and self.groundtruth_status in ("ok", "author")

    @property
    def reference(self) -> str:
        """Where the test's reference comes from, as the per-test files show it: `author`,
        `groundtruth:<model>`, `invalid`, or "" (none asked for)."""
        if self.groundtruth_status == "ok":
            return f"groundtruth:{self.groundtruth_model or ''}"
        return self.groundtruth_status or ""

    @property
    def flagged(self) -> bool:
        """The safety judge flagged the inputs (prompt injection or harmful content)."""
        return self.safety not in (None, "safe")

    @staticmethod
    def make_id(
        origin: str, rule_id: str | None, scenario: str | None, inputs: dict[str, Any]
    ) -> str:
        return content_id("test", origin, rule_id, scenario, inputs)


class MetricSummary(_Record):
    """One metric on one run, averaged over its judges (ok counts 100, err 0)."""

    score: float | None = Field(None, description="Average 0-100 over the judges that answered.")
    outcome: Outcome = "unknown"
    judges: int = Field(0, description="Judges (or checks) that gave a verdict.")
    errors: int = Field(0, description="Judges whose call failed.")


class TestRun(_Record):
    """One (test, model under test, run index) cell."""

    __test__ = False

    test_id: str
    model: str
    run_index: int = 0
    output: str | None = None
    error: str | None = None
    fault: Fault | None = Field(
        None,
        description="The reply was empty (or a multi-step prompt's step was cut off at the "
        "token limit): `error` says so, `output` keeps what came back; it is never judged, "
        "and a re-run asks again.",
    )
    cut_off: bool = Field(
        False,
        description="The answer stopped at the token limit (finish_reason: length); it is "
        "judged as it came back, the way the prompt's users would get it.",
    )
    steps: dict[str, str] | None = Field(
        None,
        description="The named answers of a multi-step or multi-run prompt, in order "
        "(LVE variables); `output` is the last one (multi-step) or all of them (multi-run).",
    )
    usage: Usage = Field(default_factory=Usage)
    latency_ms: float | None = None
    metrics: dict[str, MetricSummary] = Field(
        default_factory=dict,
        description="Metric name -> average over its judges; derived from the verdicts "
        "(`metric_results`) whenever one is recorded, and on load.",
    )

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.test_id, self.model, self.run_index)

    @property
    def ok(self) -> bool:
        """A whole answer came back: the run can be judged."""
        return self.error is None and self.output is not None and self.fault is None

    @field_serializer("error")
    def _scrub_error(self, value: str | None) -> str | None:
        return _scrubbed(value)


MetricKind = Literal["compliance", "accuracy", "groundtruth", "custom", "check"]


# The check `promptgen/evaluation/expected_class.py` adds to every run with the compliance
# judge; reports and exports show it only where a test expects a class.
CLASS_CHECK = "expected_class"


class MetricInfo(_Record):
    """A metric this run scores with: built-in, custom (`*.metric.prompty`) or a check."""

    name: str
    kind: MetricKind
    scorer: bool = Field(False, description="Answers a 0-100 score (else ok/err).")
    description: str | None = None
    source: str | None = Field(None, description="File the metric came from, if any.")


class MetricResult(_Record):
    """One judge's (or one deterministic check's) verdict on one run."""

    test_id: str
    model: str
    run_index: int = 0
    metric: str
    judge: str | None = Field(None, description="Eval model, or None for deterministic checks.")
    score: float | None = Field(None, description="0-100 where the metric is a score.")
    outcome: Outcome | None = None
    reason: str | None = None
    error: str | None = None

    @property
    def key(self) -> tuple[str, str, int, str, str | None]:
        return (self.test_id, self.model, self.run_index, self.metric, self.judge)

    @field_serializer("error")
    def _scrub_error(self, value: str | None) -> str | None:
        return _scrubbed(value)


class GroundtruthAttempt(_Record):
    """One groundtruth answer and the eval models' scores of it."""

    test_id: str
    attempt: int = Field(description="0 for the first answer; each retry asks a fresh variant.")
    model: str
    output: str | None = None
    scores: dict[str, float] = Field(default_factory=dict, description="Eval model -> 0-100.")
    reasons: dict[str, str] = Field(default_factory=dict)
    average: float | None = None
    accepted: bool = False
    error: str | None = None

    @field_serializer("error")
    def _scrub_error(self, value: str | None) -> str | None:
        return _scrubbed(value)

    @field_serializer("reasons")
    def _scrub_reasons(self, value: dict[str, str]) -> dict[str, str]:
        return {k: scrub(v) for k, v in value.items()}  # a judge's error may stand here


class SafetyVerdict(_Record):
    """The safety judge's verdict on the prompt under test."""

    verdict: Safety
    reason: str = ""
    model: str | None = Field(None, description="The judge that gave the verdict.")

    @property
    def flagged(self) -> bool:
        return self.verdict != "safe"


class FailureMode(_Record):
    description: str
    harm: Literal["low", "medium", "high"] = "medium"


class TestReview(_Record):
    """An LLM review of the whole test collection."""

    __test__ = False

    model: str | None = None
    summary: str | None = None
    quality_score: int | None = Field(None, ge=1, le=10)
    failure_modes: list[FailureMode] = Field(default_factory=list)
    weaknesses: list[str] = Field(default_factory=list)
    importance: dict[str, int] = Field(
        default_factory=dict, description="Test id -> importance, 1 (least) to 10 (most)."
    )
    notes: dict[str, str] = Field(default_factory=dict, description="Test id -> why it matters.")


class StageRecord(_Record):
    name: str
    status: StageStatus = "pending"
    started_at: datetime | None = None
    finished_at: datetime | None = None
    duration_s: float | None = None
    calls_planned: int | None = None
    calls_done: int = 0
    usage: Usage = Field(default_factory=Usage)
    error: str | None = Field(None, description="Summary of the failures below.")
    failures: dict[str, str] = Field(
        default_factory=dict, description="Unit key -> error, for every unit that failed."
    )
    done: list[str] = Field(
        default_factory=list, description="Finished work units (batches) inside the stage."
    )
    counts: dict[str, int] = Field(
        default_factory=dict, description="What the stage counted (duplicates dropped, ...)."
    )
    notes: dict[str, str] = Field(
        default_factory=dict,
        description="Item -> why it has less than the options ask (not a failure).",
    )

    @field_serializer("error")
    def _scrub_error(self, value: str | None) -> str | None:
        return _scrubbed(value)

    @field_serializer("failures")
    def _scrub_failures(self, value: dict[str, str]) -> dict[str, str]:
        return {k: scrub(v) for k, v in value.items()}


MutationOperator = Literal[
    "delete-sentence", "negate", "number", "format", "swap-steps", "llm"
]  # fmt: skip


class Mutant(_Record):
    """A changed copy of the prompt under test: one edit to one message's template."""

    id: str = Field(description="Content hash of the mutated messages.")
    operator: MutationOperator
    description: str = Field(description="The edit in words, e.g. 'always' -> 'never'.")
    message: int = Field(description="Index of the message edited.")
    content: str = Field(description="The edited message's new template text.")
    diff: str = Field(description="Unified diff of the prompt's messages, original -> mutant.")
    equivalent: bool = Field(
        False,
        description="Renders exactly like the original for every test of the suite, so no "
        "test can tell them apart: not run, not counted in the score.",
    )


class MutantRun(_Record):
    """One (mutant, test, model, run index) cell: the mutant's output and its scores."""

    mutant_id: str
    test_id: str
    model: str
    run_index: int = 0
    output: str | None = None
    error: str | None = None
    metrics: dict[str, MetricSummary] = Field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.mutant_id}|{self.test_id}|{self.model}|{self.run_index}"

    @property
    def ok(self) -> bool:
        return self.error is None and self.output is not None

    @field_serializer("error")
    def _scrub_error(self, value: str | None) -> str | None:
        return _scrubbed(value)


class MutantVerdict(_Record):
    """What the suite said about one mutant."""

    mutant_id: str
    status: Literal["killed", "survived", "equivalent", "incomplete"]
    killed_by: list[str] = Field(
        default_factory=list, description="Test ids whose results moved beyond noise."
    )
    reasons: list[str] = Field(default_factory=list, description="Why, per killing test.")
    rules_ran: list[str] = Field(
        default_factory=list, description="Rules (ids, '' for none) whose tests ran on it."
    )
    rules_killed: list[str] = Field(
        default_factory=list, description="Rules (ids, '' for none) whose tests killed it."
    )


class MutationScore(_Record):
    """Killed of the mutants counted (non-equivalent, every cell finished)."""

    killed: int = 0
    counted: int = 0

    @property
    def percent(self) -> float | None:
        return 100.0 * self.killed / self.counted if self.counted else None


class MutationResults(_Record):
    """`promptgen mutate`: the mutants of the prompt, their runs, and the mutation score
    (docs/mutation.md)."""

    models: list[str] = Field(default_factory=list, description="Models the mutants ran on.")
    max_mutants: int = Field(20, description="Cap on the mutants run (--mutants).")
    llm_mutants: int = Field(4, description="Mutants asked of the rules model (--llm-mutants).")
    proposed: bool = Field(False, description="The mutant list is final.")
    candidates: dict[str, int] = Field(
        default_factory=dict, description="Operator -> distinct mutants it made, before the cap."
    )
    dropped: dict[str, int] = Field(
        default_factory=dict, description="Why mutants were dropped (duplicate, no-op, ...)."
    )
    mutants: list[Mutant] = Field(default_factory=list)
    runs: list[MutantRun] = Field(default_factory=list)
    verdicts: list[MutantVerdict] = Field(default_factory=list)
    score: MutationScore = Field(default_factory=MutationScore)
    by_rule: dict[str, MutationScore] = Field(
        default_factory=dict, description="Rule id ('' for tests without one) -> score."
    )


CompileStatus = Literal["kept", "disagrees", "too-few-runs", "invalid", "none"]


class CompiledRule(_Record):
    """An output rule compiled to a deterministic check (--compile-rules): the check the
    rules model proposed, and how often it agreed with the compliance judge."""

    rule_id: str
    check: dict[str, Any] | None = Field(
        None, description="The check as {name: arguments} (frontmatter syntax); None: none fits."
    )
    proposed: str | None = Field(None, description="The proposal as the model wrote it.")
    name: str = Field(description="The metric name of the check: rule:<short rule id>.")
    status: CompileStatus = "none"
    reason: str = Field("", description="The model's reason, or why the proposal was dropped.")
    compared: int = Field(0, description="Judged runs of the rule's tests compared.")
    agreed: int = Field(0, description="Of those, runs where the check and the judge agree.")

    @property
    def agreement(self) -> float | None:
        return self.agreed / self.compared if self.compared else None

    @property
    def kept(self) -> bool:
        return self.status == "kept"

    @property
    def sure(self) -> bool:
        """Kept, and agreed with the judge on every run compared."""
        return self.kept and self.compared > 0 and self.agreed == self.compared


class BatchJob(_Record):
    """A batch submitted to a provider's Batch API (`--batch`, docs/scale.md), kept so
    a run killed while it waits resumes by polling the batch, never by submitting the
    same requests again."""

    id: str = Field(description="The provider's batch id.")
    model: str
    input_file_id: str
    requests: dict[str, str] = Field(
        default_factory=dict,
        description="custom_id -> hash of the request (its response-cache key).",
    )
    status: str = "validating"
    finished: bool = Field(False, description="Its results were read back.")


# How a structured answer is asked: the provider's `json_schema` response format, JSON
# mode with the schema in the system message, or the schema in the system message alone.
StructuredMode = Literal["json_schema", "json_object", "prompt"]


class SchemaRefusal(_Record):
    """A server refused a structured-output mode for one schema on one model (HTTP 400):
    that schema is asked another way on that model from then on, every other schema
    still as before (docs/llm.md#refused-schemas)."""

    model: str = Field(description="The model id, as the run names it.")
    schema_name: str = Field(description="The answer schema's name (GroundtruthScore, ...).")
    mode: StructuredMode = Field(description="The mode the server refused.")
    instead: StructuredMode | None = Field(
        description="The mode the schema was answered in after the refusal; null under "
        "--strict-output (the run stopped)."
    )
    message: str = Field(description="The server's reason, scrubbed, on one line.")

    def said(self) -> str:
        """The line stderr and the reports show."""
        line = f"{self.model} refused the {self.mode} of {self.schema_name}: {self.message}"
        return f"{line}; asked with the schema in the prompt instead" if self.instead else line

    @field_serializer("message")
    def _scrub_message(self, value: str) -> str:
        return scrub(value)


class EditRecord(_Record):
    """How this version of the prompt continued the run of the version before it: what
    changed, what was kept, added and retired (docs/iterate.md). The previous version's
    whole run is `OUT/history/<previous>/context.json` (promptgen/history.py)."""

    previous: str = Field(
        description="Version (short content hash) of the prompt this run continued from."
    )
    previous_run_id: str = ""
    at: datetime | None = Field(None, description="When the edit was found (UTC).")
    summary: str = Field("", description="The one line said when the run continued.")
    what: str = Field("", description="What changed, briefly: 'messages: 1 instruction added'.")
    changed: list[str] = Field(
        default_factory=list,
        description="What differs: messages, inputs, parameters, author tests, scenarios, "
        "instructions.",
    )
    prompt_diff: str = Field("", description="Unified diff of the prompt's text, then -> now.")
    rederived: list[str] = Field(
        default_factory=list,
        description="Analyses derived again because the text they depend on changed "
        "(intent, input_spec, behaviours).",
    )
    rules_kept: list[str] = Field(
        default_factory=list, description="Ids of rules and inverse rules kept as they were."
    )
    rules_reworded: list[str] = Field(
        default_factory=list,
        description="Ids kept although their instruction was reworded: the rule read from "
        "the new wording says the same thing.",
    )
    rules_added: list[str] = Field(default_factory=list, description="Ids of new rules.")
    rules_retired: list[Rule] = Field(
        default_factory=list,
        description="Rules of the previous version whose instruction was deleted or changed "
        "in meaning: listed, not run.",
    )
    tests_kept: list[str] = Field(default_factory=list, description="Ids of tests carried over.")
    tests_retired: list[Test] = Field(
        default_factory=list,
        description="Tests of the previous version not carried over (their rule retired, or "
        "an author's row removed): listed, not run.",
    )
    tests_flagged: list[str] = Field(
        default_factory=list,
        description="Kept tests whose input no longer passes the validity check against the "
        "new input specification.",
    )
    regenerated: list[str] = Field(
        default_factory=list, description="Parts generated anew by --regenerate (rules, tests)."
    )
    # The work of the carry-over still to do (docs/carry-over.md): the stages read these.
    derive: list[str] = Field(
        default_factory=list,
        description="Instructions (as rules record their `source`) whose rules the rules "
        "stage is still to derive: new or reworded ones; emptied once derived.",
    )
    input_spec_then: str | None = Field(
        None,
        description="The previous version's input specification while the kept tests are "
        "still to be compared with the new one (they are judged again if it differs).",
    )
    tests_rechecked: list[str] = Field(
        default_factory=list,
        description="Kept tests judged again for validity because the input specification "
        "changed (those that failed are in tests_flagged).",
    )
    variant: int = Field(
        0,
        description="With --regenerate: the offset added to the variant of the regenerated "
        "stages' calls, so the response cache does not give the earlier answers back.",
    )

    def variant_for(self, stage: str) -> int:
        """The variant offset of `stage`'s calls (0 unless it is regenerated)."""
        stages = {
            "rules": ("rules", "inverse_rules", "tests", "baseline"),
            "tests": ("tests", "baseline"),
        }
        return self.variant if any(stage in stages.get(p, ()) for p in self.regenerated) else 0
