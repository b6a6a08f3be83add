"""Shared figures for every report: compliance rates, failing runs and their reasons.

A run is compliant when its "compliance" summary says ok, non-compliant when it says
err; runs without a verdict (unknown, missing, errored) are left out of every rate. So
are faulty runs (an empty or cut-off reply, `TestRun.fault`): they are shown as errors,
never as passes or failures, even where an older promptgen had judged them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from promptgen.context import Context
from promptgen.results import CLASS_CHECK, MetricResult, Rule, Test, TestRun
from promptgen.secrets import scrub
from promptgen.words import counted

COMPLIANCE = "compliance"
NO_SCENARIO = "(none)"
NO_RULE = "(no rule)"


# How each fault is named in the reports.
FAULT_LABELS = {"empty": "empty output", "truncated": "truncated output"}


def judged(run: TestRun) -> bool:
    """Whether the run's verdicts count: it returned a whole answer."""
    return run.error is None and run.fault is None


def verdict(run: TestRun) -> bool | None:
    """True compliant, False non-compliant, None no verdict."""
    if not judged(run):
        return None
    summary = run.metrics.get(COMPLIANCE)
    if summary is None or summary.outcome == "unknown":
        return None
    return summary.outcome == "ok"


def compliance_rate(runs: Iterable[TestRun]) -> float | None:
    """Compliant / (compliant + non-compliant) as a percentage; None without verdicts."""
    verdicts = [v for v in map(verdict, runs) if v is not None]
    return 100.0 * sum(verdicts) / len(verdicts) if verdicts else None


def scenario_of(test: Test | None) -> str:
    return (test.scenario if test else None) or NO_SCENARIO


def metric_names(ctx: Context) -> list[str]:
    """Every metric but compliance: declared ones first (`Context.shown_metrics`), then
    any only seen on runs."""
    names = [m.name for m in ctx.shown_metrics()]
    names += [name for run in ctx.test_runs for name in run.metrics]
    return [n for n in dict.fromkeys(names) if n != COMPLIANCE]


def check_names(ctx: Context) -> set[str]:
    return {m.name for m in ctx.metrics if m.kind == "check"}


def failed_checks(run: TestRun, checks: set[str]) -> list[str]:
    if not judged(run):
        return []
    return [n for n, s in run.metrics.items() if n in checks and s.outcome == "err"]


def faulty(runs: Iterable[TestRun]) -> int:
    """Runs whose reply was empty or cut off."""
    return sum(r.fault is not None for r in runs)


def error_kind(run: TestRun) -> str:
    """What went wrong with an errored run, in a few words."""
    return FAULT_LABELS.get(run.fault or "", "call failed")


def error_text(run: TestRun) -> str:
    """A run's error as reports show it: keys a provider quoted are blanked."""
    return scrub(run.error or "")


def is_failing(run: TestRun, checks: set[str]) -> bool:
    return verdict(run) is False or bool(failed_checks(run, checks))


def has_compliance_judge(ctx: Context) -> bool:
    return any(m.kind == COMPLIANCE for m in ctx.metrics)


def passed(run: TestRun, checks: set[str], compliance_judged: bool) -> bool | None:
    """A run's CI verdict, as JUnit counts it: False when it is non-compliant or failed a
    check; True when it is compliant, or (no compliance judge, e.g. `pa run`) a check gave
    it a verdict and none failed; None when it errored or nothing judged it."""
    if not judged(run):
        return None
    if is_failing(run, checks):
        return False
    if verdict(run) is True:
        return True
    if compliance_judged:
        return None
    answered = any(m.outcome != "unknown" for n, m in run.metrics.items() if n in checks)
    return True if answered else None


def mean(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


@dataclass
class Failure:
    """A failing run with everything a reader needs to judge it."""

    run: TestRun
    test: Test | None
    rule: Rule | None
    checks: list[str]
    reasons: list[MetricResult] = field(default_factory=list)


def failures(ctx: Context) -> list[Failure]:
    """Non-compliant runs and runs with a failed check, with the failing verdicts' reasons."""
    checks = check_names(ctx)
    by_run: dict[tuple[str, str, int], list[MetricResult]] = {}
    for result in ctx.metric_results:
        failed = result.metric == COMPLIANCE or result.metric in checks
        if failed and result.outcome == "err":
            by_run.setdefault((result.test_id, result.model, result.run_index), []).append(result)
    found = []
    for run in ctx.test_runs:
        if is_failing(run, checks):
            test = ctx.test(run.test_id)
            found.append(
                Failure(
                    run=run,
                    test=test,
                    rule=ctx.rule(test.rule_id) if test else None,
                    checks=failed_checks(run, checks),
                    reasons=by_run.get(run.key, []),
                )
            )
    return found


def reason_label(result: MetricResult) -> str:
    """Who said it: the judge model, or the check for deterministic verdicts."""
    if result.metric == COMPLIANCE:
        return result.judge or COMPLIANCE
    return f"{result.metric} ({result.judge})" if result.judge else result.metric


@dataclass(frozen=True)
class Undecided:
    """A metric or check that could not decide on a run: every verdict of it was "unknown"
    (a checker's lambda failed, a check lacked a value, a judge's answer was unreadable) or
    its call failed; `reason` is the first such verdict's reason or error."""

    run: TestRun
    metric: str
    reason: str


@dataclass
class UndecidedGroup:
    """The runs on which one metric could not decide for the same reason, and of how many
    runs it judged."""

    metric: str
    reason: str
    items: list[Undecided]
    of: int

    def line(self) -> str:
        """E.g. "lve:LambdaChecker could not decide on 3 of 3 runs: the lambda failed: ..."."""
        return (
            f"{self.metric} could not decide on {len(self.items)} of "
            f"{counted(self.of, 'run')}: {self.reason}"
        )


def undecided(ctx: Context) -> list[Undecided]:
    """Every (run, metric) without a decision, in run order. Errored and faulty runs are
    left out (the errors show them), and so is the class check on a test that expects no
    class (it does not apply there)."""
    results: dict[tuple[str, str, int, str], list[MetricResult]] = {}
    for result in ctx.metric_results:
        key = (result.test_id, result.model, result.run_index, result.metric)
        results.setdefault(key, []).append(result)
    found = []
    for run in ctx.test_runs:
        if not judged(run):
            continue
        for name, summary in run.metrics.items():
            if summary.judges or name == CLASS_CHECK:
                continue
            mine = results.get((*run.key, name), [])
            blank = [r for r in mine if r.error is not None or r.outcome == "unknown"]
            if blank:
                first = blank[0]
                reason = scrub(first.error) if first.error else first.reason
                found.append(Undecided(run, name, reason or "no reason given"))
    return found


def undecided_groups(ctx: Context) -> list[UndecidedGroup]:
    """`undecided` grouped by metric and reason, largest group first."""
    groups: dict[tuple[str, str], list[Undecided]] = {}
    for item in undecided(ctx):
        groups.setdefault((item.metric, item.reason), []).append(item)
    judged_runs = [r for r in ctx.test_runs if judged(r)]
    found = [
        UndecidedGroup(metric, reason, items, sum(metric in r.metrics for r in judged_runs))
        for (metric, reason), items in groups.items()
    ]
    return sorted(found, key=lambda g: -len(g.items))


@dataclass
class RuleRates:
    """Pass rate per model of the runs whose test targets one rule."""

    rule_id: str
    text: str
    inverse: bool
    rates: dict[str, float | None]
    runs: dict[str, int]


def rule_rates(ctx: Context) -> list[RuleRates]:
    """One row per rule and inverse rule, plus one for tests without a rule when run."""
    models = ctx.models_run
    tests = {t.id: t for t in ctx.tests}
    by_rule: dict[str | None, list[TestRun]] = {}
    for run in ctx.test_runs:
        test = tests.get(run.test_id)
        by_rule.setdefault(test.rule_id if test else None, []).append(run)
    rows = [(r.id, r.text, r.inverse) for r in ctx.all_rules]
    known = {r.id for r in ctx.all_rules}
    orphans = [k for k in by_rule if k not in known]
    if orphans:
        rows.append((NO_RULE, "tests that target no known rule", False))
    result = []
    for rule_id, text, inverse in rows:
        keys = orphans if rule_id == NO_RULE else [rule_id]
        runs = [run for key in keys for run in by_rule.get(key, [])]
        result.append(
            RuleRates(
                rule_id=rule_id,
                text=text,
                inverse=inverse,
                rates={m: compliance_rate(r for r in runs if r.model == m) for m in models},
                runs={m: sum(r.model == m for r in runs) for m in models},
            )
        )
    return result


def excerpt(text: str | None, limit: int = 160) -> str:
    if not text:
        return ""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def number(value: float | None, digits: int = 1) -> str:
    """A rate or score as the terminal overview shows it: one decimal, "-" when missing."""
    return "-" if value is None or value != value else f"{value:.{digits}f}"


def percent(value: float | None, digits: int = 1) -> str:
    shown = number(value, digits)
    return shown if shown == "-" else f"{shown}%"
