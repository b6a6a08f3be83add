"""A run that continued the run of an edited prompt, built from the two real runs of
tests/diff_runs.py: run A is kept as the previous version's history in run B's folder,
and B records the edit (`Context.edit`) as the continuation does.

The previous version's prompt gains a line the edit removed, so the two are versions
(hashes) of their own; its rule 1 read "The output follows requirement one." and the
edit reworded it (same id). The record says: rule 4 added (its test has new inputs: one
test added, A's test of rule 4 retired), a rule about French retired, R2's test flagged;
every other test kept. The figures are diff_runs.py's: m1 87.5 -> 75.0 (R2's two runs
on m1 went pass -> fail), m2 87.5 -> 100.0 (I1's two runs on m2 went fail -> pass).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from promptgen import history
from promptgen.context import Context, load_context, save_context
from promptgen.results import EditRecord, Rule
from tests.diff_runs import two_runs

REMOVED_LINE = "Answer in one word."
RETIRED = Rule(id="rule-retired0", text="The output is written in French.")
THEN_R1 = "The output follows requirement one."


@dataclass
class Edited:
    folder: Path  # B's folder: context.json and history/<previous>/
    then: Context
    now: Context

    @property
    def previous(self) -> str:
        return history.version_of(self.then)

    @property
    def version(self) -> str:
        return history.version_of(self.now)

    def test_of(self, label: str, ctx: Context | None = None) -> str:
        """The id of the test whose input names `label` ("R2": rule 2's test)."""
        (found,) = [t.id for t in (ctx or self.now).tests if f"-{label}-" in t.inputs["review"]]
        return found

    def rule_of(self, number: int) -> str:
        text = f"The output follows requirement number {number}."
        (found,) = [r.id for r in self.now.rules if r.text == text]
        return found


def edited_run(tmp: Path) -> Edited:
    """Run A and B (tests/diff_runs.py), then make B the continuation of A."""
    then_folder, now_folder = two_runs(tmp)
    then = load_context(then_folder / "context.json")
    now = load_context(now_folder / "context.json")
    system = then.prompt.messages[0]
    system.content = system.content.rstrip() + f"\n{REMOVED_LINE}\n"
    then.prompt_hash = then.prompt.content_hash()
    r1 = next(r for r in then.rules if r.text == "The output follows requirement number 1.")
    r1.text = THEN_R1
    history.save(now_folder, then)
    edited = Edited(now_folder, then, now)
    r4_now = edited.test_of("R4")
    r4_then = edited.test_of("R4", then)
    now.edit = EditRecord(
        previous=edited.previous,
        previous_run_id=then.run_id,
        at=datetime(2026, 11, 29, 9, 30, tzinfo=UTC),
        summary="the prompt changed since version ... (messages: 1 instruction deleted)",
        what="messages: 1 instruction deleted",
        changed=["messages"],
        prompt_diff=history.prompt_diff(
            then.prompt, now.prompt, labels=(edited.previous, edited.version)
        ),
        rules_kept=[
            r.id for r in now.all_rules if r.id not in (edited.rule_of(1), edited.rule_of(4))
        ],
        rules_reworded=[edited.rule_of(1)],
        rules_added=[edited.rule_of(4)],
        rules_retired=[RETIRED],
        tests_kept=[t.id for t in now.tests if t.id != r4_now],
        tests_retired=[t for t in then.tests if t.id == r4_then],
        tests_flagged=[edited.test_of("R2")],
    )
    save_context(now, now_folder / "context.json")
    return edited
