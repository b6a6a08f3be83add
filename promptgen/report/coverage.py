"""Rule coverage: which (rule or inverse rule, scenario) pairs have a test, and which
carry a recorded reason for having none (the tests stage's notes)."""

from __future__ import annotations

from dataclasses import dataclass

from promptgen.context import Context


@dataclass(frozen=True)
class Coverage:
    targets: int  # rules and inverse rules, times scenarios
    with_tests: int
    with_reason: int  # no test, and the tests stage said why

    @property
    def share(self) -> float:
        return 100.0 * self.with_tests / self.targets if self.targets else 100.0


# The tests stage's unit for stepwise writing (stages/tests.py STEP): each input it
# keeps passed its checks as it was written (the specification's kind, its class).
STEPWISE = "stepwise"


def inputs_unchecked(ctx: Context) -> bool:
    """No generated test's input was checked (validity off and whole-prompt writing, as
    at --effort min with a large model): a count of tests written says nothing of
    whether their inputs are what they claim to be."""
    if STEPWISE in ctx.stage("tests").done:
        return False
    generated = [t for t in ctx.tests if t.origin != "sample"]
    return bool(generated) and all(t.valid is None for t in generated)


def _unchecked(ctx: Context) -> str:
    return "; inputs not checked" if inputs_unchecked(ctx) else ""


def rule_coverage(ctx: Context) -> Coverage:
    scenarios: list[str | None] = [s.name for s in ctx.prompt.scenarios] or [None]
    per_scenario = bool(ctx.prompt.scenarios)  # without scenarios, any test of the rule
    have = {(t.rule_id, t.scenario if per_scenario else None) for t in ctx.tests if t.rule_id}
    notes = ctx.stage("tests").notes
    rules = ctx.all_rules
    with_tests = with_reason = 0
    for rule in rules:
        for scenario in scenarios:
            if (rule.id, scenario) in have:
                with_tests += 1
            elif (f"{rule.id}|{scenario}" if scenario else rule.id) in notes:
                with_reason += 1
    return Coverage(len(rules) * len(scenarios), with_tests, with_reason)


@dataclass(frozen=True)
class BehaviourCoverage:
    listed: int
    with_tests: int
    with_reason: int  # no test, and the tests stage said why
    classes: int  # behaviours that are output classes
    classes_with_tests: int
    classes_expected: int  # with a test that expects the class (its input was sorted into it)


def behaviour_coverage(ctx: Context) -> BehaviourCoverage:
    """Which behaviours a test exercises (stage behaviours; Test.behaviours)."""
    exercised = {b for t in ctx.tests for b in t.behaviours}
    notes = ctx.stage("tests").notes
    reasons = {k.split("|", 1)[0] for k in notes}
    listed = ctx.behaviours
    classes = [b for b in listed if b.kind == "class"]
    return BehaviourCoverage(
        listed=len(listed),
        with_tests=sum(b.id in exercised for b in listed),
        with_reason=sum(b.id not in exercised and b.id in reasons for b in listed),
        classes=len(classes),
        classes_with_tests=sum(b.id in exercised for b in classes),
        classes_expected=sum(
            any(b.id in t.behaviours and t.expected_class for t in ctx.tests) for b in classes
        ),
    )


def behaviour_line(ctx: Context) -> str:
    """ "behaviours   11 of 12 with a test written for them (4 of 4 output classes, 4 with
    the class expected); 1 without, with the reason in rules.md" ("" before there are
    behaviours). Written for, not checked: only a class test's input is checked (sorted
    into its class) before it carries the class as expected."""
    cov = behaviour_coverage(ctx)
    if not cov.listed or not ctx.tests:
        return ""
    classes = (
        f" ({cov.classes_with_tests} of {cov.classes} output classes, {cov.classes_expected} "
        "with the class expected)"
        if cov.classes
        else ""
    )
    line = (
        f"behaviours   {cov.with_tests} of {cov.listed} with a test written for them{classes}"
        f"{_unchecked(ctx)}"
    )
    missing = cov.listed - cov.with_tests
    if missing:
        why = f", {cov.with_reason} with the reason in rules.md" if cov.with_reason else ""
        line += f"; {missing} without{why}"
    return line


def summary_line(ctx: Context) -> str:
    """ "coverage     every rule and inverse rule has a test (12 of 12)", or how many have
    none ("" before there are rules)."""
    cov = rule_coverage(ctx)
    if not cov.targets:
        return ""
    per = " and scenario" if ctx.prompt.scenarios else ""
    if cov.with_tests == cov.targets:
        return (
            f"coverage     every rule and inverse rule{per} has a test "
            f"({cov.with_tests} of {cov.targets}){_unchecked(ctx)}"
        )
    missing = cov.targets - cov.with_tests
    why = (
        f", {cov.with_reason} with the reason in the tests stage's notes" if cov.with_reason else ""
    )
    return (
        f"coverage     {cov.with_tests} of {cov.targets} rules and inverse rules{per} have a "
        f"test; {missing} without{why}{_unchecked(ctx)}"
    )
