"""An edited prompt continues its run (docs/carry-over.md).

`continue_run` fills the new version's context from the previous version's: what did
not change is kept by id (rules, inverse rules, tests, intent, input spec, behaviours,
verdicts on rules and test inputs), what changed is left for the stages to derive again
(only that), and every run and verdict is made again. What was kept, retired and left
to derive is recorded in `ctx.edit` (EditRecord); the previous version's whole run is
kept as history (promptgen/history.py) by whoever saves the new one.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from pathlib import Path

from promptgen import history
from promptgen.carry.changes import Changes, InstructionDiff, compare, instruction_key
from promptgen.carry.rules import RulePlan, plan_rules
from promptgen.carry.tests import TestPlan, plan_tests
from promptgen.config import RunConfig
from promptgen.context import Context
from promptgen.model import PromptUnderTest
from promptgen.prompting.seeds import instruction_seeds
from promptgen.results import EditRecord, StageRecord

REGENERATE = ("rules", "tests")
# Stage records whose `done` keys stay valid for the tests kept (keys name test ids).
_KEYED_BY_TEST = ("expand",)


def regeneration_variant(run_id: str) -> int:
    """The variant offset of a --regenerate run: far from the variants the stages use
    themselves (under a few thousand), and another for every run."""
    return 1_000_000 * (1 + int(hashlib.sha256(run_id.encode()).hexdigest()[:6], 16) % 1000)


def unrelated(then: PromptUnderTest, now: PromptUnderTest) -> bool:
    """Whether `now` is another prompt than `then`, not an edit of it: another name from
    another file, and not one instruction sentence or author's row in common (so nothing
    would carry over)."""
    if then.name == now.name or (then.source and then.source == now.source):
        return False
    keys_then = {instruction_key(s.text) for s in instruction_seeds(then)}
    keys_now = {instruction_key(s.text) for s in instruction_seeds(now)}
    rows_then = [s.inputs for s in then.test_samples]
    return not (keys_then & keys_now) and not any(s.inputs in rows_then for s in now.test_samples)


def continue_run(
    ctx: Context, previous: Context, cfg: RunConfig, out: Path, regenerate: list[str]
) -> str:
    """Fill `ctx` (the edited prompt's new context, options resolved) from `previous`;
    returns the one line that says what changed and what is kept."""
    same = previous.prompt_hash == ctx.prompt_hash
    changes = Changes({}, InstructionDiff()) if same else compare(previous.prompt, ctx.prompt)
    asked = [p for p in REGENERATE if p in regenerate]
    regenerated = ["rules", "tests"] if "rules" in asked else asked
    rules = plan_rules(previous, ctx.prompt, cfg, regenerated)
    tests = plan_tests(previous, ctx.prompt, {r.id for r in rules.retired}, changes, regenerated)
    version = history.version_of(previous)
    edit = EditRecord(
        previous=version,
        previous_run_id=previous.run_id,
        at=datetime.now(UTC),
        changed=changes.changed,
        prompt_diff=history.prompt_diff(
            previous.prompt, ctx.prompt, labels=(version, history.version_of(ctx))
        ),
        regenerated=regenerated,
        variant=regeneration_variant(ctx.run_id) if regenerated else 0,
    )
    ctx.edit = edit
    _analyses(ctx, previous, changes, edit)
    _rules(ctx, rules, edit)
    _tests(ctx, previous, tests, edit)
    _records(ctx, previous, changes, tests, edit)
    edit.summary = summary(previous, changes, rules, tests, edit, out / history.HISTORY / version)
    return edit.summary


def _analyses(ctx: Context, previous: Context, changes: Changes, edit: EditRecord) -> None:
    """Intent, input spec and behaviours: kept, or derived again when the text each
    depends on changed; the safety verdict on the prompt, kept while its messages are."""
    guidance = changes.said.get("instructions", "")
    if not changes.has("messages") and "intent" not in guidance:
        ctx.intent = previous.intent
    else:
        edit.rederived.append("intent")
    spec_inputs = changes.has("messages", "inputs", "author tests")
    if not spec_inputs and "input_spec" not in guidance:
        ctx.input_spec = previous.input_spec
    else:
        edit.rederived.append("input_spec")
        edit.input_spec_then = previous.input_spec
    ctx.behaviours = [b.model_copy() for b in previous.behaviours]
    if changes.has("messages", "inputs", "instructions"):
        edit.rederived.append("behaviours")
    if not changes.has("messages"):
        ctx.safety = previous.safety


def _rules(ctx: Context, plan: RulePlan, edit: EditRecord) -> None:
    carried = [r.model_copy() for r in plan.kept]
    ids = {r.id for r in carried}
    # Rules a tests file (--tests) brought are kept beside them.
    ctx.rules = carried + [r for r in ctx.rules if r.id not in ids]
    inverse = [r.model_copy() for r in plan.inverse]
    ids |= {r.id for r in inverse}
    ctx.inverse_rules = inverse + [r for r in ctx.inverse_rules if r.id not in ids]
    edit.rules_kept = [r.id for r in [*plan.kept, *plan.inverse]]
    edit.rules_retired = list(plan.retired)
    edit.derive = list(plan.derive)


def _tests(ctx: Context, previous: Context, plan: TestPlan, edit: EditRecord) -> None:
    ids = {t.id for t in plan.kept}
    ctx.tests = plan.kept + [t for t in ctx.tests if t.id not in ids]
    edit.tests_kept = [t.id for t in plan.kept]
    edit.tests_retired = list(plan.retired)
    referenced = {t.id for t in plan.kept if t.groundtruth_status is not None}
    ctx.groundtruth = [a.model_copy() for a in previous.groundtruth if a.test_id in referenced]
    kept_rules = set(edit.rules_kept)
    ctx.compiled_rules = [c for c in previous.compiled_rules if c.rule_id in kept_rules]
    ctx.schema_refusals = list(previous.schema_refusals)


def _records(
    ctx: Context, previous: Context, changes: Changes, tests: TestPlan, edit: EditRecord
) -> None:
    """The stage records of the new version: new, but for the `done` keys that still
    name work kept (expansion rounds of kept tests, the baseline when kept, the
    behaviours when not derived again) and the tests stage's notes on slots left empty
    (so an edit does not ask again for what its version could not write)."""
    ctx.stages = {}
    for name in _KEYED_BY_TEST:
        old = previous.stages.get(name)
        if old is not None and old.done:
            ctx.stages[name] = StageRecord(name=name, done=list(old.done))
    baseline = previous.stages.get("baseline")
    if baseline is not None and tests.baseline_kept and baseline.done:
        ctx.stages["baseline"] = StageRecord(name="baseline", done=list(baseline.done))
    behaviours = previous.stages.get("behaviours")
    if behaviours is not None and "behaviours" not in edit.rederived:
        ctx.stages["behaviours"] = StageRecord(name="behaviours", done=list(behaviours.done))
    old_tests = previous.stages.get("tests")
    if old_tests is not None and old_tests.notes and "tests" not in edit.regenerated:
        ctx.stages["tests"] = StageRecord(name="tests", notes=dict(old_tests.notes))


def summary(
    previous: Context,
    changes: Changes,
    rules: RulePlan,
    tests: TestPlan,
    edit: EditRecord,
    folder: Path,
) -> str:
    """The one line said when the run continues."""
    kept_rules = len(rules.kept)
    if edit.regenerated and not changes.changed:
        what = " and ".join(edit.regenerated)
        head = f"--regenerate: generating the {what} of version {edit.previous} anew"
        edit.what = f"--regenerate {what}"
    else:
        edit.what = changes.phrase()
        head = f"the prompt changed since version {edit.previous} ({edit.what})"
        if edit.regenerated:
            edit.what += f"; --regenerate {' and '.join(edit.regenerated)}"
            head += f"; --regenerate {' and '.join(edit.regenerated)}"
    n = len(edit.derive)
    again = f" (and rules to read from {n} new or reworded instruction{'s' * (n != 1)})"
    again = again if n else ""
    return (
        f"{head}: keeping {kept_rules} of {len(previous.rules)} rules{again} and "
        f"{len(tests.kept)} of {len(previous.tests)} tests; the previous run is in {folder}"
    )
