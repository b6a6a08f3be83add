"""What an edit of the prompt did, read from the run that continued after it and the run
of the version before it (`OUT/history/<previous>/context.json`): docs/iterate.md.

The figures, flips and pass rule are `promptgen diff`'s (report/diff.py): the previous
version is A (then), this run is B (now). What was kept, added and retired is the
continuation's own record (`Context.edit`). Flipped runs are grouped per test, worst
first: the test that flipped on the most models, then on the most runs, then the one
whose pass rate moved the most (see `worst_first`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from promptgen.context import Context, load_context
from promptgen.errors import BadInputError
from promptgen.history import CONTEXT_FILE, HISTORY, version_of
from promptgen.report.diff import DiffResult, diff_contexts, verdicts
from promptgen.report.findings import inputs_text
from promptgen.report.stats import excerpt
from promptgen.results import EditRecord, Rule, Test

CHANGES_FILE = "changes.md"
OUTPUT_LIMIT = 400  # characters of each output a flipped test shows, then and now
INPUT_LIMIT = 200  # characters of a test's inputs shown


@dataclass(frozen=True)
class FlipCell:
    """One run (model, run index) of a test that turned over, with both outputs."""

    model: str
    run_index: int
    output_then: str
    output_now: str


@dataclass(frozen=True)
class Flipped:
    """A test with runs that went pass → fail (a regression) or fail → pass (a fix)."""

    test_id: str
    rule: str | None
    inputs: str
    cells: list[FlipCell]
    moved: float  # the test's pass rate over all its runs with a verdict, now - then (points)

    @property
    def models(self) -> list[str]:
        return list(dict.fromkeys(c.model for c in self.cells))


@dataclass(frozen=True)
class Reworded:
    """A rule that kept its id although its instruction was reworded."""

    rule_id: str
    then: str
    now: str


@dataclass
class EditChanges:
    """Everything the reports say first about an edit."""

    edit: EditRecord
    previous: str  # the version this run continued from
    version: str  # this run's version
    diff: DiffResult
    rules_added: list[Rule] = field(default_factory=list)
    rules_retired: list[Rule] = field(default_factory=list)
    rules_reworded: list[Reworded] = field(default_factory=list)
    rules_kept: int = 0
    tests_added: list[Test] = field(default_factory=list)
    tests_retired: list[Test] = field(default_factory=list)
    tests_flagged: list[Test] = field(default_factory=list)
    tests_kept: int = 0
    regressions: list[Flipped] = field(default_factory=list)
    fixes: list[Flipped] = field(default_factory=list)
    rule_texts: dict[str, str] = field(default_factory=dict)  # id -> text, either version

    @property
    def said(self) -> str:
        """What the edit changed, briefly ('messages: 1 instruction added')."""
        return self.edit.what or ", ".join(self.edit.changed) or "the prompt changed"

    def rule_text(self, rule_id: str | None) -> str | None:
        return self.rule_texts.get(rule_id) if rule_id else None


def previous_file(out: Path, ctx: Context) -> Path | None:
    """Where the previous version's run is kept (None: this run continued none)."""
    if ctx.edit is None:
        return None
    return out / HISTORY / ctx.edit.previous / CONTEXT_FILE


def load_changes(ctx: Context, out: str | Path) -> EditChanges | None:
    """What the edit did, when `ctx` continued an edited prompt's run and the previous
    version's run is kept in `out`'s history (None otherwise)."""
    path = previous_file(Path(out), ctx)
    if path is None or not path.is_file():
        return None
    try:
        then = load_context(path)
    except BadInputError:  # an unreadable copy: the reports go on without the section
        return None
    return edit_changes(ctx, then)


def edit_changes(now: Context, then: Context) -> EditChanges:
    """What the edit recorded in `now.edit` did, `then` being the previous version's run."""
    edit = now.edit
    assert edit is not None, "edit_changes needs a run that continued an edited prompt's run"
    diff = diff_contexts(then, now, f"@{edit.previous}", f"@{version_of(now)}")
    texts = {r.id: r.text for r in [*then.all_rules, *edit.rules_retired, *now.all_rules]}
    kept = set(edit.tests_kept)
    before = {t.id for t in then.tests}
    flagged, added = set(edit.tests_flagged), set(edit.rules_added)
    regressions, fixes = _flipped(then, now, diff, texts)
    return EditChanges(
        edit=edit,
        previous=edit.previous,
        version=version_of(now),
        diff=diff,
        rules_added=[r for r in now.all_rules if r.id in added],
        rules_retired=list(edit.rules_retired),
        rules_reworded=[_reworded(i, then, now) for i in edit.rules_reworded],
        rules_kept=len(edit.rules_kept),
        tests_added=[
            t
            for t in now.tests
            if t.id not in kept and not (t.origin == "sample" and t.id in before)
        ],
        tests_retired=list(edit.tests_retired),
        tests_flagged=[t for t in now.tests if t.id in flagged],
        tests_kept=len(kept),
        regressions=regressions,
        fixes=fixes,
        rule_texts=texts,
    )


def _reworded(rule_id: str, then: Context, now: Context) -> Reworded:
    was, rule = then.rule(rule_id), now.rule(rule_id)
    now_text = rule.text if rule else ""
    return Reworded(rule_id, was.text if was else now_text, now_text)


def _flipped(
    then: Context, now: Context, diff: DiffResult, texts: dict[str, str]
) -> tuple[list[Flipped], list[Flipped]]:
    """The flips of the diff grouped per test: regressions and fixes, worst first."""
    outputs = {r.key: r.output for r in then.test_runs}
    runs = {r.key: r for r in now.test_runs}
    rates = _moved(then, now)
    found: dict[tuple[bool, str], list[FlipCell]] = {}
    for flip in [*diff.pass_to_fail, *diff.fail_to_pass]:
        run = runs[(flip.test_id, flip.model, flip.run_index)]
        cell = FlipCell(
            flip.model,
            flip.run_index,
            excerpt(outputs.get(run.key), OUTPUT_LIMIT),
            excerpt(run.output, OUTPUT_LIMIT),
        )
        found.setdefault((flip.passed_now, flip.test_id), []).append(cell)
    groups: dict[bool, list[Flipped]] = {True: [], False: []}
    for (fixed, test_id), cells in found.items():
        test = now.test(test_id)
        inputs = inputs_text(test.inputs if test else {}, INPUT_LIMIT)
        rule = texts.get(test.rule_id) if test and test.rule_id else None
        groups[fixed].append(Flipped(test_id, rule, inputs, cells, rates.get(test_id, 0.0)))
    return worst_first(groups[False]), worst_first(groups[True], fixes=True)


def worst_first(flipped: list[Flipped], *, fixes: bool = False) -> list[Flipped]:
    """Most models flipped first, then most runs, then the largest move of the test's
    pass rate (its fall for a regression, its rise for a fix), then by test id."""
    sign = 1 if fixes else -1
    return sorted(
        flipped, key=lambda f: (-len(f.models), -len(f.cells), -sign * f.moved, f.test_id)
    )


def _moved(then: Context, now: Context) -> dict[str, float]:
    """Per test: its pass rate now minus then, over its runs with a verdict (points)."""

    def rates(ctx: Context) -> dict[str, float]:
        by_test: dict[str, list[bool]] = {}
        for (test_id, _, _), passed in verdicts(ctx).items():
            if passed is not None:
                by_test.setdefault(test_id, []).append(passed)
        return {t: 100 * sum(v) / len(v) for t, v in by_test.items()}

    before, after = rates(then), rates(now)
    return {t: after[t] - before[t] for t in after if t in before}
