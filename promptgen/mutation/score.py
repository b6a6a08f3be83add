"""The kill rule and the mutation score (docs/mutation.md).

For each (test, model) both the original and the mutant ran:
- pass rate: a run passes when no metric says `err`. The noise is the spread of the
  original's runs (max - min of their 0/1 pass values: 0 when they agree, 1 when they
  disagree). The mutant kills when |its pass rate - the original's| > that spread.
- scores: for each metric that answers a 0-100 score, the noise is the spread of the
  original's run scores plus SCORE_FLOOR points (a judge's scores move a little from
  one call to the next). The mutant kills when |its average - the original's| > that.

A mutant is killed when any of its (test, model) pairs kills it; equivalent mutants and
mutants with a cell not finished are not counted. Score = killed / counted, overall
and per rule (a rule counts the mutants its tests ran on, and those its tests killed).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from promptgen.context import Context
from promptgen.results import (
    MetricSummary,
    Mutant,
    MutantVerdict,
    MutationResults,
    MutationScore,
    Test,
)

SCORE_FLOOR = 5.0
Pair = tuple[str, str]  # (test id, model)


def passes(metrics: dict[str, MetricSummary]) -> bool:
    return not any(s.outcome == "err" for s in metrics.values())


def _spread(values: Sequence[float]) -> float:
    return max(values) - min(values) if values else 0.0


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


Runs = dict[Pair, list[dict[str, MetricSummary]]]


def kills(original: list[dict[str, MetricSummary]], mutant: list[dict[str, MetricSummary]],
          scorers: set[str]) -> str | None:  # fmt: skip
    """Why the mutant's runs differ from the original's beyond noise (None: they don't)."""
    before = [1.0 if passes(m) else 0.0 for m in original]
    after = [1.0 if passes(m) else 0.0 for m in mutant]
    noise = _spread(before)
    if abs(_mean(after) - _mean(before)) > noise:
        return f"pass rate {_mean(before):.0%} -> {_mean(after):.0%} (noise {noise:.0%})"
    for name in sorted(scorers):
        was = [s.score for m in original if (s := m.get(name)) and s.score is not None]
        now = [s.score for m in mutant if (s := m.get(name)) and s.score is not None]
        if not was or not now:
            continue
        noise = _spread(was) + SCORE_FLOOR
        if abs(_mean(now) - _mean(was)) > noise:
            return f"{name} {_mean(was):.0f} -> {_mean(now):.0f} (noise {noise:.0f})"
    return None


def _original(ctx: Context, models: set[str]) -> Runs:
    runs: Runs = defaultdict(list)
    for run in ctx.test_runs:
        if run.ok and run.model in models and run.metrics:
            runs[(run.test_id, run.model)].append(run.metrics)
    return runs


def judge(ctx: Context, tests: list[Test], runs_per_test: int, scorers: set[str]) -> None:
    """Fill `ctx.mutation`'s verdicts and scores from the runs recorded."""
    state = ctx.mutation
    if state is None:
        return
    models = set(state.models)
    original = _original(ctx, models)
    rule_of = {t.id: t.rule_id or "" for t in tests}
    by_mutant: dict[str, Runs] = defaultdict(lambda: defaultdict(list))
    cells: dict[str, int] = defaultdict(int)
    for run in state.runs:
        if run.ok and run.test_id in rule_of and run.model in models:
            by_mutant[run.mutant_id][(run.test_id, run.model)].append(run.metrics)
            cells[run.mutant_id] += 1
    expected = len(tests) * len(models) * runs_per_test
    state.verdicts = [
        _verdict(m, original, by_mutant[m.id], rule_of, scorers, cells[m.id] >= expected)
        for m in state.mutants
    ]
    _scores(state.verdicts, state)


def _verdict(mutant: Mutant, original: Runs, runs: Runs, rule_of: dict[str, str],
             scorers: set[str], complete: bool) -> MutantVerdict:  # fmt: skip
    if mutant.equivalent:
        return MutantVerdict(mutant_id=mutant.id, status="equivalent")
    verdict = MutantVerdict(mutant_id=mutant.id, status="incomplete")
    for (test_id, model), mine in runs.items():
        before = original.get((test_id, model))
        if not before:
            continue  # the original has no answer to compare with
        rule = rule_of[test_id]
        if rule not in verdict.rules_ran:
            verdict.rules_ran.append(rule)
        why = kills(before, mine, scorers)
        if why is not None:
            if test_id not in verdict.killed_by:
                verdict.killed_by.append(test_id)
            verdict.reasons.append(f"{test_id} on {model}: {why}")
            if rule not in verdict.rules_killed:
                verdict.rules_killed.append(rule)
    if verdict.killed_by:
        verdict.status = "killed"  # one kill is enough, even with cells left to run
    elif complete:
        verdict.status = "survived"
    return verdict


def _scores(verdicts: list[MutantVerdict], state: MutationResults) -> None:
    counted = [v for v in verdicts if v.status in ("killed", "survived")]
    overall = MutationScore(killed=sum(v.status == "killed" for v in counted), counted=len(counted))
    by_rule: dict[str, MutationScore] = {}
    for verdict in counted:
        for rule in verdict.rules_ran:
            score = by_rule.setdefault(rule, MutationScore())
            score.counted += 1
            score.killed += rule in verdict.rules_killed
    state.score, state.by_rule = overall, by_rule
