"""What a reviewer acts on, as data both reports render: how many tests ran or were
invalid, groundtruth answers and their status, rule groundedness, and the failing runs
grouped by rule (worst first).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from promptgen.context import Context
from promptgen.report.stats import NO_RULE, Failure, excerpt, failures, judged
from promptgen.results import Rule, Test

EXAMPLES = 3  # failing examples shown per rule group
INPUT_LIMIT = 80  # characters of a test's inputs in a table cell

GROUNDTRUTH_LABELS = {"ok": "accepted", "invalid": "invalid", "author": "author-given"}
AUTHOR = "test author"


def inputs_text(inputs: dict[str, Any], limit: int = INPUT_LIMIT) -> str:
    """A test's inputs on one line: the value alone for one input, `name: value; ...`
    for several; shortened to `limit` characters."""

    def shown(value: Any) -> str:
        return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)

    if len(inputs) == 1:
        flat = shown(next(iter(inputs.values())))
    else:
        flat = "; ".join(f"{k}: {shown(v)}" for k, v in inputs.items())
    return excerpt(flat, limit) or "(none)"


def inputs_json(inputs: dict[str, Any], limit: int = 2000) -> str:
    """A test's inputs as indented JSON, cut at `limit` characters."""
    text = json.dumps(inputs, indent=2, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass
class TestCounts:
    """How many tests there are, how many ran, how many the validity check rejected and
    the safety judge flagged."""

    __test__ = False

    total: int
    run: int
    invalid: int
    invalid_run: int
    not_run: int
    unsafe: int = 0

    def headline(self) -> str:
        """ "54 tests, 35 run, 19 invalid" and what does not add up."""
        invalid = f"{self.invalid} invalid"
        if self.invalid_run:
            invalid += f" ({self.invalid_run} of them run)"
        parts = [f"{self.total} tests", f"{self.run} run", invalid]
        if self.unsafe:
            parts.append(f"{self.unsafe} unsafe")
        if self.not_run and self.run:
            parts.append(f"{self.not_run} valid not run")
        return ", ".join(parts)


def count_tests(ctx: Context) -> TestCounts:
    ran = {r.test_id for r in ctx.test_runs}
    invalid = [t for t in ctx.tests if t.valid is False]
    return TestCounts(
        total=len(ctx.tests),
        run=sum(t.id in ran for t in ctx.tests),
        invalid=len(invalid),
        invalid_run=sum(t.id in ran for t in invalid),
        not_run=sum(t.id not in ran and t.valid is not False and not t.flagged for t in ctx.tests),
        unsafe=sum(t.flagged for t in ctx.tests),
    )


def invalid_tests(ctx: Context) -> list[Test]:
    return [t for t in ctx.tests if t.valid is False]


def invalid_note(ctx: Context) -> str:
    """Why the invalid tests stand apart, and whether some were run all the same."""
    note = (
        "The validity check found these tests do not follow the input specification. "
        "They are run only with --keep-invalid"
    )
    ran = count_tests(ctx).invalid_run
    return note + (f"; {ran} of them ran here." if ran else ".")


def shown_tests(ctx: Context) -> list[Test]:
    """The tests of the tests table: the invalid ones have their own section."""
    return [t for t in ctx.tests if t.valid is not False]


def groundtruth_tests(ctx: Context) -> list[Test]:
    """Tests with a groundtruth answer or status, in test order."""
    return [t for t in ctx.tests if t.groundtruth_status or t.groundtruth is not None]


def groundtruth_status(test: Test) -> str:
    return GROUNDTRUTH_LABELS.get(test.groundtruth_status or "", "not settled")


def groundtruth_source(test: Test) -> str:
    if test.groundtruth_model:
        return test.groundtruth_model
    return AUTHOR if test.groundtruth_status == "author" else "-"


def groundtruth_summary(ctx: Context) -> str:
    """ "4 accepted, 1 invalid, 2 author-given (threshold 80.0)"."""
    tests = groundtruth_tests(ctx)
    counts = [
        f"{sum(t.groundtruth_status == key for t in tests)} {label}"
        for key, label in GROUNDTRUTH_LABELS.items()
    ]
    unsettled = sum(t.groundtruth_status is None for t in tests)
    if unsettled:
        counts.append(f"{unsettled} not settled")
    models = sorted({t.groundtruth_model for t in tests if t.groundtruth_model})
    threshold = ctx.options.evaluation.groundtruth_threshold
    line = f"{len(tests)} answer{'' if len(tests) == 1 else 's'}: {', '.join(counts)}"
    if models:
        line += f"; from {', '.join(models)}"
    return line + f"; accepted when the eval models' average score reaches {threshold:g}"


@dataclass
class Groundedness:
    """The groundedness stage's verdict on one rule."""

    rule: Rule
    verdict: str  # "grounded", "not grounded", "check failed", "not checked"
    reason: str


def groundedness(ctx: Context) -> list[Groundedness]:
    """One row per rule (inverse rules are not checked); ungrounded first."""
    stage = ctx.stages.get("groundedness")
    failed = stage.failures if stage else {}
    rows = []
    for rule in ctx.rules:
        if rule.grounded is not None:
            verdict = "grounded" if rule.grounded else "not grounded"
            rows.append(Groundedness(rule, verdict, rule.grounded_reason or ""))
        elif rule.id in failed:
            rows.append(Groundedness(rule, "check failed", failed[rule.id]))
        else:
            rows.append(Groundedness(rule, "not checked", ""))
    order = {"not grounded": 0, "check failed": 1, "grounded": 2, "not checked": 3}
    return sorted(rows, key=lambda g: order[g.verdict])  # stable: rule order within


def groundedness_summary(rows: list[Groundedness]) -> str:
    counts = {v: sum(r.verdict == v for r in rows) for v in ("grounded", "not grounded")}
    line = f"{len(rows)} rules: {counts['grounded']} grounded, {counts['not grounded']} not"
    line += " grounded"
    for extra in ("check failed", "not checked"):
        count = sum(r.verdict == extra for r in rows)
        if count:
            line += f", {count} {extra}"
    return line


@dataclass
class FailureGroup:
    """The failing runs of the tests that target one rule, counted per model."""

    rule_id: str
    text: str
    inverse: bool
    failed: dict[str, int]
    runs: dict[str, int]
    examples: list[Failure] = field(default_factory=list)

    @property
    def total_failed(self) -> int:
        return sum(self.failed.values())

    @property
    def total_runs(self) -> int:
        return sum(self.runs.values())

    @property
    def rate(self) -> float:
        """Failure rate in % over every model's judged runs."""
        return 100.0 * self.total_failed / self.total_runs if self.total_runs else 0.0


def failure_groups(ctx: Context, examples: int = EXAMPLES) -> list[FailureGroup]:
    """Rules with at least one failing run, worst first (failure rate, then count).

    Runs counted are the judged ones (a whole answer came back): errored runs are
    listed in the errors and counted nowhere else."""
    models = ctx.models_run
    tests = {t.id: t for t in ctx.tests}
    known = {r.id: r for r in ctx.all_rules}
    judged_runs: dict[str, dict[str, int]] = {}
    for run in ctx.test_runs:
        if judged(run):
            key = _rule_key(tests.get(run.test_id), known)
            per_model = judged_runs.setdefault(key, dict.fromkeys(models, 0))
            per_model[run.model] += 1
    failing: dict[str, list[Failure]] = {}
    for failure in failures(ctx):
        failing.setdefault(_rule_key(failure.test, known), []).append(failure)
    groups = []
    for key, found in failing.items():
        rule = known.get(key)
        groups.append(
            FailureGroup(
                rule_id=key,
                text=rule.text if rule else "tests that target no known rule",
                inverse=bool(rule and rule.inverse),
                failed={m: sum(f.run.model == m for f in found) for m in models},
                runs=judged_runs.get(key, dict.fromkeys(models, 0)),
                examples=_spread(found, models, examples),
            )
        )
    order = {key: i for i, key in enumerate([*known, NO_RULE])}
    return sorted(groups, key=lambda g: (-g.rate, -g.total_failed, order.get(g.rule_id, 0)))


def _rule_key(test: Test | None, known: dict[str, Rule]) -> str:
    rule_id = test.rule_id if test else None
    return rule_id if rule_id in known else NO_RULE


def _spread(found: list[Failure], models: list[str], limit: int) -> list[Failure]:
    """Up to `limit` failures taking each model in turn, so every model shows one."""
    queues = [[f for f in found if f.run.model == m] for m in models]
    picked: list[Failure] = []
    while len(picked) < limit and any(queues):
        for queue in queues:
            if queue and len(picked) < limit:
                picked.append(queue.pop(0))
    return picked
