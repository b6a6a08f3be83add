"""Compile output rules to deterministic checks (--compile-rules, docs/compiled-rules.md).

One call of the rules model per output rule proposes a check from the catalogue, or
none. The proposal is parsed by the check parser (a bad one is dropped with the
parser's reason), then compared with the compliance judge on the rule's judged runs;
one that agrees often enough is kept and evaluated at once on every run (no call). It
runs after the metrics stage, so the judge's verdicts on this invocation's runs count;
a proposal is validated again when more judged runs exist (a later invocation).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from promptgen.config import RunConfig
from promptgen.context import Context
from promptgen.errors import BadInputError
from promptgen.evaluation.compiled import (
    CHECK_NAMES,
    COMPLIANCE,
    NONE,
    agreement,
    catalogue_text,
    check_metric,
    compile_proposal,
    decide,
    judged_runs,
    metric_name,
)
from promptgen.evaluation.scoring import Needed, verdict
from promptgen.prompting import prompt_text, stage_messages
from promptgen.prompting.bounded import Text
from promptgen.results import CompiledRule, Rule, TestRun
from promptgen.selection import eval_tests
from promptgen.stage import Projection, Scope, WorkItem

requires = ("rules",)
after = ("runs", "metrics")
phase = "evaluation"

CheckName = Literal[(NONE, *CHECK_NAMES)]  # type: ignore[valid-type]


_REASON = Text(300, description="Why this check expresses the rule, or why none does.")
_ARGUMENT = Text(600, description="The check's argument, as written after '=' ('' for none).")


class RuleCheckProposal(BaseModel):
    """The answer: a reason, then a catalogue name (an enum, so nothing else is valid)
    and its argument, which the check parser reads as `--check NAME=ARGUMENT`."""

    reason: _REASON  # type: ignore[valid-type]
    check: CheckName = Field(description='A check of the catalogue, or "none".')
    argument: _ARGUMENT  # type: ignore[valid-type]


def enabled(cfg: RunConfig) -> bool:
    wanted = cfg.ev.compile_rules or cfg.ev.judge_only_when_unsure
    return wanted and cfg.evaluating and any(m.name == COMPLIANCE for m in cfg.output_metrics)


def todo(ctx: Context, cfg: RunConfig) -> list[WorkItem[Rule]]:
    """A proposal for each output rule without one (one call); a validation (no call)
    for each parsed proposal whose rule has more, or fewer, judged runs than compared."""
    records = {c.rule_id: c for c in ctx.compiled_rules}
    runs: dict[str, list[tuple[TestRun, bool]]] | None = None
    items = []
    for rule in ctx.rules:
        record = records.get(rule.id)
        if record is None:
            items.append(WorkItem(f"propose|{rule.id}", rule))
            continue
        if record.check is None:
            continue
        runs = runs if runs is not None else judged_runs(ctx)
        if len(runs.get(rule.id, [])) != record.compared:
            items.append(WorkItem(f"validate|{rule.id}", rule, calls=0))
    return items


def estimate(ctx: Context, cfg: RunConfig, projection: Projection) -> int:
    if ctx.rules:
        return sum(item.calls for item in todo(ctx, cfg))
    return projection.rules


async def run(item: WorkItem[Rule], scope: Scope) -> None:
    ctx, rule = scope.ctx, item.data
    record = next((c for c in ctx.compiled_rules if c.rule_id == rule.id), None)
    if record is None:
        record = await propose(rule, scope)
        if record is None:
            return
        ctx.compiled_rules.append(record)
        order = {r.id: i for i, r in enumerate(ctx.rules)}  # rule order, not arrival order
        ctx.compiled_rules.sort(key=lambda c: order.get(c.rule_id, len(order)))
    if record.check is not None:
        validate(ctx, record)
        await apply(scope, record)
    records = [c for c in ctx.compiled_rules if c.rule_id in {r.id for r in ctx.rules}]
    for status in ("kept", "disagrees", "too-few-runs", "invalid", "none"):
        scope.set_count(status, sum(c.status == status for c in records))
    scope.checkpoint()


async def propose(rule: Rule, scope: Scope) -> CompiledRule | None:
    """The rules model's proposal for `rule`, parsed (None when the call failed)."""
    messages = stage_messages(
        "compile_rules",
        prompt=prompt_text(scope.ctx.prompt),
        rule=rule.text,
        catalogue=catalogue_text(),
    )
    result = await scope.complete(messages, model="rules", output=RuleCheckProposal, temperature=0)
    if not result.ok:
        scope.fail(result.error)
        return None
    answer = result.parsed
    record = CompiledRule(rule_id=rule.id, name=metric_name(rule.id), reason=answer.reason)
    if answer.check == NONE:
        return record
    record.proposed = f"{answer.check}={answer.argument}"
    try:
        record.check = compile_proposal(answer.check, answer.argument)
    except BadInputError as err:
        record.status, record.reason = "invalid", f"not a valid check: {err.one_line()}"[:400]
    return record


def validate(ctx: Context, record: CompiledRule) -> None:
    """Compare the check with the judge on the rule's judged runs; keep it or not. A
    check no longer kept takes its verdicts with it."""
    assert record.check is not None
    runs = judged_runs(ctx).get(record.rule_id, [])
    was_kept = record.kept
    record.compared, record.agreed = len(runs), agreement(record.check, runs)
    decide(record)
    if was_kept and not record.kept:
        ctx.metric_results = [r for r in ctx.metric_results if r.metric != record.name]
        ctx.metrics = [m for m in ctx.metrics if m.name != record.name]
        ctx.summarise()


async def apply(scope: Scope, record: CompiledRule) -> None:
    """A kept check on every successful run of the tests evaluated (no call): the same
    verdicts the metrics stage would record, now rather than on the next invocation."""
    if not record.kept:
        return
    ctx = scope.ctx
    metric = check_metric(record)
    ctx.use_metrics([metric.info])
    have = {r.key for r in ctx.metric_results if r.metric == metric.name}
    tests = {t.id: t for t in eval_tests(ctx, scope.cfg)}
    for run in ctx.test_runs:
        test = tests.get(run.test_id)
        item = Needed(run, test, metric, None) if test is not None and run.ok else None
        if item is not None and item.key not in have:
            result = await verdict(ctx, scope.llm, item)  # a check: no call
            ctx.record_verdicts([result], run)
