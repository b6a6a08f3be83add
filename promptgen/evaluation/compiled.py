"""Output rules compiled to deterministic checks (--compile-rules, docs/compiled-rules.md).

A compiled check is an ordinary check (`{name: arguments}`, built by the check parser)
named `rule:<short rule id>`. It is kept when it agrees with the compliance judge on
the judged runs of its rule's tests; a kept check runs on every output, and with
--judge-only-when-unsure a check that agreed on every run stands in for the judge.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from promptgen.context import Context, summary
from promptgen.errors import BadInputError
from promptgen.evaluation.check_metric import CheckMetric
from promptgen.evaluation.parse import COUNT_UNITS, NAMES, build, cli_value, parse_check
from promptgen.evaluation.protocol import Case, Metric, MetricBase, Verdict
from promptgen.evaluation.scoring import Needed, VerdictKey, needed
from promptgen.options import Evaluation
from promptgen.results import CompiledRule, MetricInfo, Rule, Test, TestRun

PREFIX = "rule:"
COMPLIANCE = "compliance"
# A proposal is kept when it agrees with the judge on at least this share of at least
# MIN_RUNS judged runs: fewer runs say too little, and a check that often disagrees
# would replace the judge's reading with a different rule.
MIN_AGREEMENT = 0.9
MIN_RUNS = 3
NONE = "none"

# What the rules model reads about each check: its argument as written after `=` (the
# `--check NAME=VALUE` syntax), and when it passes. Keys are the catalogue's base names.
CATALOGUE: dict[str, str] = {
    "equals": "a text; the whole output equals it (trimmed)",
    "contains": "a text; the output contains it (case-sensitive)",
    "icontains": "a text; the output contains it, ignoring case",
    "contains-any": "a list like [a, b]; the output contains at least one of them",
    "icontains-any": "a list; at least one of them, ignoring case",
    "contains-all": "a list; the output contains every one of them",
    "icontains-all": "a list; every one of them, ignoring case",
    "starts-with": "a text; the trimmed output starts with it",
    "istarts-with": "a text; starts with it, ignoring case",
    "ends-with": "a text; the trimmed output ends with it",
    "iends-with": "a text; ends with it, ignoring case",
    "regex": "a Python regular expression, or {pattern: ..., flags: i}; a match is "
    "searched anywhere (anchor with ^ and $ for the whole output)",
    "is-json": "{} for any JSON, or a JSON Schema object such as "
    '{"type": "object", "required": ["a", "b"]}; the whole output is JSON',
    "language": "an ISO 639-1 code such as en; the output is in that language",
    "levenshtein": "{value: text, threshold: n}; within n edits of the text",
    **{
        f"{unit}-count": f"{{min: n}}, {{max: n}} or {{equals: n}}; counts {plural}"
        + (" (split at . ! ?)" if unit == "sentence" else "")
        for unit, plural in COUNT_UNITS.items()
    },
}
CHECK_NAMES: tuple[str, ...] = (*NAMES, *(f"not-{n}" for n in NAMES))


def catalogue_text() -> str:
    lines = [f"- {name}: {what}" for name, what in CATALOGUE.items()]
    lines.append("- not-<any check above>: passes where that check fails (same argument)")
    return "\n".join(lines)


def metric_name(rule_id: str) -> str:
    return PREFIX + rule_id.removeprefix("rule-")[:8]


def compile_proposal(name: str, argument: str) -> dict[str, Any]:
    """The proposal as a frontmatter check, `{name: arguments}`, read as `--check
    NAME=ARGUMENT` is; raises BadInputError when the check parser refuses it."""
    value = cli_value(name, argument)
    base = name.removeprefix("not-")
    if base == "is-json" and not str(value).strip():
        value = {}  # any JSON, as the frontmatter writes it
    if base.endswith("-count"):
        bounds = value if isinstance(value, dict) else {"equals": value}
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in bounds.values()):
            # The parser takes any value here; a count compared with text never passes.
            raise BadInputError(f"{name} needs whole numbers, got {argument!r}")
    build(name, value)  # the parser's own validation: a bad regex, schema, bound ...
    return {name: value}


@functools.lru_cache(maxsize=256)
def _metric(name: str, spec: str) -> CheckMetric:
    check = json.loads(spec)
    info = MetricInfo(name=name, kind="check", description="compiled from an output rule")
    return CheckMetric(info, {**check, "name": name})


def check_metric(record: CompiledRule) -> CheckMetric:
    """The record's check as a metric named `record.name` (built once per check)."""
    return _metric(record.name, json.dumps(record.check, sort_keys=True))


def target_rule(ctx: Context, test: Test, rules: dict[str, Rule] | None = None) -> str | None:
    """The output rule a test's compliance speaks to: its rule, or the rule its inverse
    rule negates (the judge holds every output to the output rules)."""
    if test.rule_id is None:
        return None
    rule = (rules or {r.id: r for r in ctx.all_rules}).get(test.rule_id)
    if rule is None:
        return None
    return rule.inverse_of if rule.inverse else rule.id


def is_stand_in(judge: str | None) -> bool:
    return judge is not None and judge.startswith(PREFIX)


def judge_outcomes(ctx: Context) -> dict[tuple[str, str, int], bool]:
    """Run -> compliant, by the compliance judges only (stand-in verdicts left out)."""
    grouped: dict[tuple[str, str, int], list[Any]] = {}
    for result in ctx.metric_results:
        if result.metric == COMPLIANCE and not is_stand_in(result.judge):
            grouped.setdefault(result.key[:3], []).append(result)
    outcomes = {}
    for key, results in grouped.items():
        verdict = summary(results, scorer=False).outcome
        if verdict != "unknown":
            outcomes[key] = verdict == "ok"
    return outcomes


def judged_runs(ctx: Context) -> dict[str, list[tuple[TestRun, bool]]]:
    """Output rule id -> the judged runs of the tests that speak to it, each with the
    judge's verdict (compliant or not)."""
    outcomes = judge_outcomes(ctx)
    rules = {r.id: r for r in ctx.all_rules}
    target = {t.id: target_rule(ctx, t, rules) for t in ctx.tests}
    runs: dict[str, list[tuple[TestRun, bool]]] = {}
    for run in ctx.test_runs:
        rule = target.get(run.test_id)
        if rule is not None and run.ok and run.key in outcomes:
            runs.setdefault(rule, []).append((run, outcomes[run.key]))
    return runs


def agreement(check: dict[str, Any], runs: Sequence[tuple[TestRun, bool]]) -> int:
    """Runs where the check's pass/fail equals the judge's verdict."""
    built = parse_check(check)
    return sum(built.evaluate(run.output or "").passed == judged for run, judged in runs)


def decide(record: CompiledRule) -> None:
    """Keep the proposal, or say why not, from its figures."""
    share = record.agreement
    if record.compared < MIN_RUNS:
        record.status = "too-few-runs"
    elif share is not None and share >= MIN_AGREEMENT:
        record.status = "kept"
    else:
        record.status = "disagrees"


def kept(ctx: Context) -> list[CompiledRule]:
    rules = {r.id for r in ctx.rules}
    return [c for c in ctx.compiled_rules if c.kept and c.rule_id in rules]


@dataclass
class StandIn(MetricBase):
    """A kept check answering for the compliance judge on one run (no call); it counts
    the judge calls it saves in the context."""

    check: CheckMetric | None = None
    record: CompiledRule | None = None
    ctx: Context | None = None
    saves: int = 0

    async def evaluate(self, case: Case) -> Verdict:
        assert self.check is not None and self.record is not None and self.ctx is not None
        verdict = await self.check.evaluate(case)
        # Counted here, once per stand-in verdict: nothing awaits between this and the
        # verdict being recorded, so a resumed run neither loses nor repeats a count.
        self.ctx.judge_calls_saved += self.saves
        record = self.record
        why = (
            f"stand-in for the judge: {record.name} agreed on {record.agreed} of "
            f"{record.compared} runs; {verdict.reason}"
        )
        return Verdict(score=verdict.score, outcome=verdict.outcome, reason=why)


class Scored(Protocol):
    """What `needed_for` reads of a run's configuration (the `RunConfig`, which is built
    on this package and so is not imported here)."""

    @property
    def ev(self) -> Evaluation: ...

    @property
    def output_metrics(self) -> Sequence[Metric]: ...

    @property
    def judges(self) -> Sequence[str]: ...


def needed_for(
    ctx: Context,
    cfg: Scored,
    run: TestRun,
    test: Test,
    have: Collection[VerdictKey] = (),
) -> list[Needed]:
    """The verdicts a run needs: those of the run's metrics, every kept compiled check,
    and, with --judge-only-when-unsure on a test whose rule's check agreed on every run,
    the check standing in for the compliance judge (unless a judge already answered:
    `have` holds the verdicts recorded)."""
    records = kept(ctx) if cfg.ev.compile_rules or cfg.ev.judge_only_when_unsure else []
    metrics = [*cfg.output_metrics, *(check_metric(r) for r in records)]
    items = needed(run, test, metrics, cfg.judges)
    if not cfg.ev.judge_only_when_unsure or not records:
        return items
    target = target_rule(ctx, test)
    record = next((r for r in records if r.rule_id == target and r.sure), None)
    judged = [i for i in items if i.metric.name == COMPLIANCE and i.judge is not None]
    if record is None or not judged or any(i.key in have for i in judged):
        return items
    stand_in = StandIn(
        judged[0].metric.info,
        judged=False,
        check=check_metric(record),
        record=record,
        ctx=ctx,
        saves=len(judged),
    )
    rest = [i for i in items if i not in judged]
    return [*rest, Needed(run, test, stand_in, record.name)]
