"""Two saved runs compared, from A ("then") to B ("now"): `promptgen diff A B`.

Every figure is the one the reports show for each run on its own: compliance per model
is the overview's "(all)" row, per rule the report's rule x model table, a metric's
average the overview's column, and a run passes or fails as JUnit counts it. The runs
are joined on their stable ids: rule and test ids (content hashes) and the cell key
(test id, model, run index). docs/diff.md explains each part.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from promptgen.context import Context
from promptgen.report.overview import ALL_SCENARIOS, metric_columns, overview
from promptgen.report.stats import (
    check_names,
    excerpt,
    has_compliance_judge,
    passed,
    rule_rates,
)
from promptgen.results import Test, TestRun

# What a test's "changed" means: a stored judgement about the same inputs differs. The
# reasons given for them (reasoning, validity_reason) are prose a re-run rewords, so
# they are not compared; neither is the groundtruth's own score.
JUDGED_FIELDS = ("expected_output", "valid", "groundtruth", "groundtruth_status")
IMPORTANCE = "importance"  # the test review's 1-10 rating, when the tests were reviewed


class Change(BaseModel):
    """One figure (a rate or an average, 0-100) then and now; None where it is missing."""

    then: float | None = None
    now: float | None = None

    @property
    def delta(self) -> float | None:
        if self.then is None or self.now is None:
            return None
        return self.now - self.then

    @property
    def drop(self) -> float:
        """How many points it fell (0 when it rose, or either side is missing)."""
        delta = self.delta
        return -delta if delta is not None and delta < 0 else 0.0


class Side(BaseModel):
    """Which run one side of the diff is."""

    path: str
    prompt: str
    prompt_hash: str
    run_id: str
    models: list[str]
    tests: int
    runs: int


class ModelFigures(BaseModel):
    """A model's overall compliance and its metric averages, then and now."""

    model: str
    compliance: Change
    metrics: dict[str, Change] = Field(default_factory=dict)


class RuleChange(BaseModel):
    """A rule's compliance per model; `status` says if only one run has the rule."""

    rule_id: str
    text: str
    inverse: bool = False
    status: Literal["added", "removed", "kept"] = "kept"
    by_model: dict[str, Change] = Field(default_factory=dict)


class FieldChange(BaseModel):
    name: str
    then: Any = None
    now: Any = None


class TestRef(BaseModel):
    """A test only one run has: its id, and what a reader needs to place it."""

    __test__ = False  # not a pytest class

    test_id: str
    rule: str | None = Field(None, description="Text of the rule the test targets.")
    inputs: str = Field("", description="The inputs as JSON, shortened.")


class TestChange(BaseModel):
    """A test in both runs whose stored judgements differ."""

    __test__ = False  # not a pytest class

    test_id: str
    fields: list[FieldChange]


class Flip(BaseModel):
    """A (test, model, run index) cell whose pass/fail verdict turned over."""

    test_id: str
    model: str
    run_index: int
    rule: str | None = Field(None, description="Text of the rule the test targets.")
    passed_now: bool
    output_now: str = Field("", description="The new output, shortened.")


class DiffResult(BaseModel):
    """Everything `promptgen diff` reports."""

    then: Side
    now: Side
    warnings: list[str] = Field(default_factory=list)
    models: list[str] = Field(default_factory=list, description="Models of either run.")
    overall: list[ModelFigures] = Field(default_factory=list)
    rules: list[RuleChange] = Field(default_factory=list)
    tests_added: list[TestRef] = Field(default_factory=list)
    tests_removed: list[TestRef] = Field(default_factory=list)
    tests_changed: list[TestChange] = Field(default_factory=list)
    runs_compared: int = Field(0, description="Cells with a run in both.")
    pass_to_fail: list[Flip] = Field(default_factory=list)
    fail_to_pass: list[Flip] = Field(default_factory=list)

    @property
    def same_prompt(self) -> bool:
        return (self.then.prompt, self.then.prompt_hash) == (self.now.prompt, self.now.prompt_hash)

    @property
    def unchanged(self) -> bool:
        """No figure moved, no test came or went or changed, no run flipped."""
        figures = [c for m in self.overall for c in (m.compliance, *m.metrics.values())]
        figures += [c for r in self.rules for c in r.by_model.values()]
        moved = any(c.then != c.now for c in figures)
        lists = (self.tests_added, self.tests_removed, self.tests_changed)
        return not moved and not any(lists) and not self.pass_to_fail and not self.fail_to_pass

    def regressed(self, points: float) -> list[tuple[str, str, Change]]:
        """(model, figure name, change) of each model's compliance and metric averages
        that fell by more than `points` percentage points. A figure missing on either side
        (a model only one run has) is no regression."""
        found = []
        for figures in self.overall:
            named = {"compliance": figures.compliance, **figures.metrics}
            found += [(figures.model, n, c) for n, c in named.items() if c.drop > points]
        return found

    def regressions(self, points: float) -> list[str]:
        """`regressed`, said: "m1 compliance 100.0 -> 50.0 (-50.0)" each."""
        return [f"{model} {name} {fell(change)}" for model, name, change in self.regressed(points)]


def fell(change: Change) -> str:
    """A figure that moved, as the regression gate says it: "100.0 -> 50.0 (-50.0)"."""
    return f"{change.then:.1f} -> {change.now:.1f} ({change.delta:+.1f})"


def diff_contexts(
    then: Context,
    now: Context,
    then_path: str | Path = "A",
    now_path: str | Path = "B",
) -> DiffResult:
    """Compare two runs; the paths only label the sides."""
    models = list(dict.fromkeys([*then.models_run, *now.models_run]))
    added, removed, changed = _tests(then, now)
    flips, compared = _flips(then, now)
    return DiffResult(
        then=_side(then, then_path),
        now=_side(now, now_path),
        warnings=_prompt_warnings(then, now),
        models=models,
        overall=_overall(then, now, models),
        rules=_rules(then, now, models),
        tests_added=added,
        tests_removed=removed,
        tests_changed=changed,
        runs_compared=compared,
        pass_to_fail=[f for f in flips if not f.passed_now],
        fail_to_pass=[f for f in flips if f.passed_now],
    )


def _side(ctx: Context, path: str | Path) -> Side:
    return Side(
        path=str(path),
        prompt=ctx.prompt.name,
        prompt_hash=ctx.prompt_hash,
        run_id=ctx.run_id,
        models=ctx.models_run,
        tests=len(ctx.tests),
        runs=len(ctx.test_runs),
    )


def _prompt_warnings(then: Context, now: Context) -> list[str]:
    a, b = then.prompt, now.prompt
    if a.name != b.name:
        return [
            f"A and B are runs of different prompts ({a.name!r} and {b.name!r}): compared "
            "anyway; only rules and tests with the same content join"
        ]
    if then.prompt_hash != now.prompt_hash:
        return [
            f"the prompt {b.name!r} changed between the runs (hash {then.prompt_hash[:12]} "
            f"-> {now.prompt_hash[:12]}): compared anyway"
        ]
    return []


def per_model(ctx: Context) -> dict[str, dict[str, float | None]]:
    """Model -> {"compliance": rate, metric name: average}, from the overview's rows."""
    frame = overview(ctx)
    if frame.empty:
        return {}
    columns = {"compliance": "compliance", **metric_columns(ctx)}
    rows = frame[frame["scenario"] == ALL_SCENARIOS]
    return {
        row["model"]: {name: _number(row[column]) for name, column in columns.items()}
        for _, row in rows.iterrows()
    }


def _number(value: Any) -> float | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else value


def _overall(then: Context, now: Context, models: list[str]) -> list[ModelFigures]:
    before, after = per_model(then), per_model(now)
    result = []
    for model in models:
        a, b = before.get(model, {}), after.get(model, {})
        names = [n for n in dict.fromkeys([*a, *b]) if n != "compliance"]
        metrics = {n: Change(then=a.get(n), now=b.get(n)) for n in names}
        result.append(
            ModelFigures(
                model=model,
                compliance=Change(then=a.get("compliance"), now=b.get("compliance")),
                metrics={n: c for n, c in metrics.items() if (c.then, c.now) != (None, None)},
            )
        )
    return result


def _rules(then: Context, now: Context, models: list[str]) -> list[RuleChange]:
    before = {r.rule_id: r for r in rule_rates(then)}
    after = {r.rule_id: r for r in rule_rates(now)}
    result = []
    for rule_id in dict.fromkeys([*before, *after]):
        a, b = before.get(rule_id), after.get(rule_id)
        shown = b or a
        assert shown is not None  # the id came from one of them
        status = "kept" if a and b else "added" if b else "removed"
        result.append(
            RuleChange(
                rule_id=rule_id,
                text=shown.text,
                inverse=shown.inverse,
                status=status,
                by_model={
                    m: Change(then=a.rates.get(m) if a else None, now=b.rates.get(m) if b else None)
                    for m in models
                },
            )
        )
    return result


def _tests(then: Context, now: Context) -> tuple[list[TestRef], list[TestRef], list[TestChange]]:
    before = {t.id: t for t in then.tests}
    after = {t.id: t for t in now.tests}
    added = [_ref(now, t) for i, t in after.items() if i not in before]
    removed = [_ref(then, t) for i, t in before.items() if i not in after]
    changed = []
    for test_id in (i for i in after if i in before):
        fields = _judgements(then, before[test_id]), _judgements(now, after[test_id])
        differ = [
            FieldChange(name=name, then=fields[0][name], now=fields[1][name])
            for name in fields[0]
            if fields[0][name] != fields[1][name]
        ]
        if differ:
            changed.append(TestChange(test_id=test_id, fields=differ))
    return added, removed, changed


def _ref(ctx: Context, test: Test) -> TestRef:
    rule = ctx.rule(test.rule_id)
    inputs = json.dumps(test.inputs, ensure_ascii=False, default=str)
    return TestRef(test_id=test.id, rule=rule.text if rule else None, inputs=excerpt(inputs, 120))


def _judgements(ctx: Context, test: Test) -> dict[str, Any]:
    values = {name: getattr(test, name) for name in JUDGED_FIELDS}
    values[IMPORTANCE] = ctx.review.importance.get(test.id) if ctx.review else None
    return values


def _flips(then: Context, now: Context) -> tuple[list[Flip], int]:
    """Cells in both runs whose verdict went pass -> fail or fail -> pass, and how many
    cells are in both. A cell without a verdict on either side (an error, no judge
    answer) flips nowhere."""
    before = verdicts(then)
    compared = 0
    flips = []
    checks, judged = check_names(now), has_compliance_judge(now)
    for run in now.test_runs:
        if run.key not in before:
            continue
        compared += 1
        was, is_now = before[run.key], passed(run, checks, judged)
        if was is not None and is_now is not None and was != is_now:
            flips.append(_flip(now, run, is_now))
    return flips, compared


def verdicts(ctx: Context) -> dict[tuple[str, str, int], bool | None]:
    """Each run's pass (True), fail (False) or no verdict (None), by its cell key."""
    checks, judged = check_names(ctx), has_compliance_judge(ctx)
    return {r.key: passed(r, checks, judged) for r in ctx.test_runs}


def _flip(ctx: Context, run: TestRun, passed_now: bool) -> Flip:
    test = ctx.test(run.test_id)
    rule = ctx.rule(test.rule_id) if test else None
    return Flip(
        test_id=run.test_id,
        model=run.model,
        run_index=run.run_index,
        rule=rule.text if rule else None,
        passed_now=passed_now,
        output_now=excerpt(run.output, 120),
    )
