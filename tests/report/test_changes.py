"""What an edit did, said first: the console summary's opening block, changes.md, the
report.md section and report.html's, on a run that continued an edited prompt's run
(tests/edit_runs.py). Figures by hand in tests/diff_runs.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from promptgen.config import RunConfig
from promptgen.context import load_context
from promptgen.report.changes import (
    EditChanges,
    FlipCell,
    Flipped,
    edit_changes,
    load_changes,
    worst_first,
)
from promptgen.report.changes_view import summary_lines
from promptgen.report.console import summary
from promptgen.report.files import write_all
from tests.edit_runs import REMOVED_LINE, RETIRED, THEN_R1, Edited, edited_run


@pytest.fixture(scope="module")
def edited(tmp_path_factory: pytest.TempPathFactory) -> Edited:
    return edited_run(tmp_path_factory.mktemp("edited"))


@pytest.fixture(scope="module")
def changes(edited: Edited) -> EditChanges:
    found = load_changes(load_context(edited.folder / "context.json"), edited.folder)
    assert found is not None
    return found


@pytest.fixture(scope="module")
def written(edited: Edited, changes: EditChanges) -> Path:
    write_all(edited.now, edited.folder)
    return edited.folder


def test_what_was_kept_added_and_retired(edited: Edited, changes: EditChanges) -> None:
    assert (changes.previous, changes.version) == (edited.previous, edited.version)
    assert changes.previous != changes.version
    assert [r.id for r in changes.rules_added] == [edited.rule_of(4)]
    assert changes.rules_retired == [RETIRED]
    (reworded,) = changes.rules_reworded
    assert (reworded.rule_id, reworded.then, reworded.now) == (
        edited.rule_of(1),
        THEN_R1,
        "The output follows requirement number 1.",
    )
    assert changes.rules_kept == 6  # 4 rules and 4 inverse rules, less R1 and R4
    assert [t.id for t in changes.tests_added] == [edited.test_of("R4")]
    assert [t.id for t in changes.tests_retired] == [edited.test_of("R4", edited.then)]
    assert [t.id for t in changes.tests_flagged] == [edited.test_of("R2")]
    assert changes.tests_kept == 7


def test_flips_grouped_per_test_with_both_outputs(edited: Edited, changes: EditChanges) -> None:
    (regression,) = changes.regressions
    assert regression.test_id == edited.test_of("R2")
    assert regression.models == ["m1"]
    assert regression.rule == "The output follows requirement number 2."
    assert [(c.model, c.run_index, c.output_then, c.output_now) for c in regression.cells] == [
        ("m1", 0, "m1 answers R2", "m1 answers R2 VIOLATION"),
        ("m1", 1, "m1 answers R2", "m1 answers R2 VIOLATION"),
    ]
    assert regression.moved == -50.0  # 4 of 4 runs passed then, 2 of 4 now
    (fix,) = changes.fixes
    assert (fix.test_id, fix.models, fix.moved) == (edited.test_of("I1"), ["m2"], 50.0)
    assert [c.output_then for c in fix.cells] == ["m2 answers I1 VIOLATION"] * 2


def test_worst_first_most_models_then_runs_then_the_fall() -> None:
    def flipped(test_id: str, models: list[str], moved: float) -> Flipped:
        cells = [FlipCell(m, i, "", "") for i, m in enumerate(models)]
        return Flipped(test_id, None, "", cells, moved)

    found = [
        flipped("a", ["m1"], -25.0),
        flipped("b", ["m1", "m2"], -50.0),
        flipped("c", ["m1"], -75.0),
        flipped("d", ["m1", "m1"], -50.0),
    ]
    assert [f.test_id for f in worst_first(found)] == ["b", "d", "c", "a"]
    rises = [flipped("a", ["m1"], 25.0), flipped("c", ["m1"], 75.0)]
    assert [f.test_id for f in worst_first(rises, fixes=True)] == ["c", "a"]


def test_the_console_summary_opens_with_the_edit(edited: Edited, changes: EditChanges) -> None:
    r2, i1 = edited.test_of("R2"), edited.test_of("I1")
    assert summary_lines(changes) == [
        f"changed since {edited.previous}: messages: 1 instruction deleted",
        "  rules      +1 added, -1 retired, ~1 reworded, 6 kept",
        "  tests      +1 added, -1 retired, 1 flagged, 7 kept",
        "  m1  compliance 87.5% → 75.0% (-12.5)",
        "  m2  compliance 87.5% → 100.0% (+12.5)",
        f"  1 regression (pass → fail): {r2} on m1",
        f"  1 fix (fail → pass): {i1} on m2",
    ]
    cfg = RunConfig(edited.now.options)
    text = summary(edited.now, cfg, edited.folder, 1.0, changes)
    lines = text.splitlines()
    assert lines[:8] == [*summary_lines(changes), ""]
    assert lines[8] == "prompt       classify-sentiment"
    assert "changed since" not in summary(edited.now, cfg, edited.folder, 1.0)


def test_changes_md_sections_and_figures(edited: Edited, written: Path) -> None:
    page = (written / "changes.md").read_text(encoding="utf-8")
    r2, i1, r4 = edited.test_of("R2"), edited.test_of("I1"), edited.test_of("R4")
    r4_then = edited.test_of("R4", edited.then)
    assert page.startswith(f"# What changed: version {edited.previous} → {edited.version}\n")
    headings = [line for line in page.splitlines() if line.startswith("#")]
    assert headings == [
        f"# What changed: version {edited.previous} → {edited.version}",
        "## Prompt diff",
        "## Rules added, retired and reworded",
        "## Tests added, retired and flagged",
        "## Compliance and metric averages per model (%), then → now",
        "## Regressions (pass → fail)",
        f"### {r2} on m1",
        "## Fixes (fail → pass)",
        f"### {i1} on m2",
    ]
    assert page.split("\n\n")[1].splitlines() == [
        f"- **Now:** version {edited.version}; messages: 1 instruction deleted",
        "- **Rules:** +1 added, -1 retired, ~1 reworded, 6 kept",
        "- **Tests:** +1 added, -1 retired, 1 flagged, 7 kept",
        "- **Regressions:** 1 test, 2 runs (pass → fail)",
        "- **Fixes:** 1 test, 2 runs (fail → pass)",
    ]
    assert f"-{REMOVED_LINE}\n" in page  # the line the edit removed, in the diff block
    assert "```diff\n--- " in page
    assert f"| added | {edited.rule_of(4)} | The output follows requirement number 4. |" in page
    assert "| retired | rule-retired0 | The output is written in French. |" in page
    assert (
        f"| reworded | {edited.rule_of(1)} | "
        "The output follows requirement one. → The output follows requirement number 1. |"
    ) in page
    assert f"| added | {r4} | The output follows requirement number 4. |" in page
    assert f"| retired | {r4_then} | The output follows requirement number 4. |" in page
    assert f"| flagged | {r2} | The output follows requirement number 2. |" in page
    assert "| m1 | compliance | 87.5 | 75.0 | -12.5 |" in page
    assert "| m2 | compliance | 87.5 | 100.0 | +12.5 |" in page
    assert "| m1 | not-icontains=violation | 87.5 | 75.0 | -12.5 |" in page
    assert "| m1 | classify-sentiment-compliance | 75.0 | 75.0 | +0.0 |" in page
    assert "| m1 | 0 | m1 answers R2 | m1 answers R2 VIOLATION |" in page
    assert "| m2 | 1 | m2 answers I1 VIOLATION | m2 answers I1 |" in page
    assert "- **Pass rate of the test, then → now:** -50.0 points" in page


def test_report_md_opens_with_what_changed(edited: Edited, written: Path) -> None:
    page = (written / "report.md").read_text(encoding="utf-8")
    headings = [line for line in page.splitlines() if line.startswith("#")]
    assert headings[:11] == [
        "# promptgen report: classify-sentiment",
        f"## What changed since version {edited.previous}",
        "### Prompt diff",
        "### Rules added, retired and reworded",
        "### Tests added, retired and flagged",
        "### Compliance and metric averages per model (%), then → now",
        "### Regressions (pass → fail)",
        f"#### {edited.test_of('R2')} on m1",
        "### Fixes (fail → pass)",
        f"#### {edited.test_of('I1')} on m2",
        "## Summary",
    ]
    assert "| m1 | 0 | m1 answers R2 | m1 answers R2 VIOLATION |" in page


def test_report_html_opens_with_the_escaped_diff(edited: Edited, written: Path) -> None:
    page = (written / "report.html").read_text(encoding="utf-8")
    changes_at, summary_at = page.index('<section id="changes">'), page.index('id="summary"')
    assert changes_at < summary_at
    assert f"<h2>What changed since version {edited.previous}</h2>" in page
    assert f'<pre class="diff">--- {edited.previous}\n+++ {edited.version}\n' in page
    assert f"-{REMOVED_LINE}\n" in page
    assert "<td><pre>m1 answers R2</pre></td><td><pre>m1 answers R2 VIOLATION</pre></td>" in page
    assert "The output follows requirement one. → The output follows requirement number 1." in page


def test_markup_in_the_prompt_is_escaped(edited: Edited, changes: EditChanges) -> None:
    from promptgen.report.changes_html import changes_html
    from promptgen.report.changes_view import changes_markdown

    edit = changes.edit.model_copy(update={"prompt_diff": "+<script>x</script> | `y`\n"})
    hostile = EditChanges(**{**changes.__dict__, "edit": edit})
    assert '<pre class="diff">+&lt;script&gt;x&lt;/script&gt; | `y`\n</pre>' in changes_html(
        hostile
    )
    assert "```diff\n+<script>x</script> | `y`\n```" in changes_markdown(hostile)


def test_no_edit_no_section_and_a_stale_changes_md_removed(edited: Edited, tmp_path: Path) -> None:
    plain = edited.then.model_copy(update={"edit": None})
    (tmp_path / "changes.md").write_text("from an earlier version")
    write_all(plain, tmp_path)
    assert not (tmp_path / "changes.md").exists()
    assert "What changed" not in (tmp_path / "report.md").read_text(encoding="utf-8")
    assert load_changes(plain, tmp_path) is None


def test_an_edit_whose_previous_run_is_not_kept_has_no_section(
    edited: Edited, tmp_path: Path
) -> None:
    assert edited.now.edit is not None
    assert load_changes(edited.now, tmp_path) is None  # no history/ in tmp_path
    assert edit_changes(edited.now, edited.then).previous == edited.previous


def test_regression_lines_name_the_tests_that_flipped(edited: Edited, changes: EditChanges) -> None:
    from promptgen.gate import regression_lines

    since = f"since version {edited.previous}"
    r2 = edited.test_of("R2")
    assert regression_lines(changes, 12.5) == []  # a fall of exactly PCT passes
    assert regression_lines(changes, 5) == [
        f"m1 compliance 87.5 -> 75.0 (-12.5) {since}; pass → fail on m1: {r2}",
        f"m1 not-icontains=violation 87.5 -> 75.0 (-12.5) {since}; pass → fail on m1: {r2}",
    ]
    unflipped = EditChanges(**{**changes.__dict__, "regressions": []})
    assert regression_lines(unflipped, 5)[0] == (
        f"m1 compliance 87.5 -> 75.0 (-12.5) {since}; "
        "no run flipped (the figure moved with the tests added or retired)"
    )
