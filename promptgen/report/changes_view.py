"""What an edit did (report/changes.py), as people read it: the block that opens the
console summary, and the Markdown of `changes.md` and of report.md's first section.

Rule texts, inputs and outputs come from the contexts: untrusted, escaped outside code
blocks (markdown_text.py); the prompt diff is shown in a code block.
"""

from __future__ import annotations

from pathlib import Path

from promptgen.report.changes import CHANGES_FILE, INPUT_LIMIT, EditChanges, Flipped
from promptgen.report.diff_view import figures_section
from promptgen.report.findings import inputs_text
from promptgen.report.markdown_text import cell, fenced, table, text
from promptgen.report.stats import excerpt
from promptgen.results import Test
from promptgen.secrets import scrub
from promptgen.words import counted

FEW = 3  # flipped tests the console names before "and N more"
ORDER = (
    "the test that flipped on the most models first, then on the most runs, then the one "
    "whose pass rate moved the most. A run passes or fails as `promptgen diff` counts it "
    "(docs/diff.md)."
)
WORST_FIRST = "Worst first: " + ORDER
LARGEST_FIRST = "Largest first: " + ORDER


def rules_line(changes: EditChanges) -> str:
    return (
        f"+{len(changes.rules_added)} added, -{len(changes.rules_retired)} retired, "
        f"~{len(changes.rules_reworded)} reworded, {changes.rules_kept} kept"
    )


def tests_line(changes: EditChanges) -> str:
    return (
        f"+{len(changes.tests_added)} added, -{len(changes.tests_retired)} retired, "
        f"{len(changes.tests_flagged)} flagged, {changes.tests_kept} kept"
    )


def flips_count(flipped: list[Flipped], how: str) -> str:
    """ "1 test, 2 runs (pass → fail)"."""
    runs = sum(len(f.cells) for f in flipped)
    return f"{counted(len(flipped), 'test')}, {counted(runs, 'run')} ({how})"


def flips_line(flipped: list[Flipped], noun: str, how: str, few: int = FEW) -> str:
    """ "2 regressions (pass → fail): t1 on m1, m2; t2 on m1" naming the first `few`."""
    head = f"{counted(len(flipped), noun)} ({how})"
    if not flipped:
        return head
    named = "; ".join(f"{f.test_id} on {', '.join(f.models)}" for f in flipped[:few])
    more = f"; and {len(flipped) - few} more" if len(flipped) > few else ""
    return f"{head}: {named}{more}"


def count_lines(changes: EditChanges) -> list[tuple[str, str]]:
    """The section's opening list, as (label, text): what changed and how much."""
    edit = changes.edit
    lines = [
        ("Now", f"version {changes.version}; {changes.said}"),
        ("Rules", rules_line(changes)),
        ("Tests", tests_line(changes)),
        ("Regressions", flips_count(changes.regressions, "pass → fail")),
        ("Fixes", flips_count(changes.fixes, "fail → pass")),
    ]
    if edit.rederived:
        lines.append(("Derived again", ", ".join(edit.rederived)))
    if edit.regenerated:
        lines.append(("Generated anew (--regenerate)", ", ".join(edit.regenerated)))
    return lines


def summary_lines(changes: EditChanges) -> list[str]:
    """The block that opens the console summary."""
    lines = [
        f"changed since {changes.previous}: {changes.said}",
        f"  rules      {rules_line(changes)}",
        f"  tests      {tests_line(changes)}",
    ]
    width = max((len(f.model) for f in changes.diff.overall), default=0)
    for figures in changes.diff.overall:
        change = figures.compliance
        delta = "" if change.delta is None else f" ({change.delta:+.1f})"
        then, now = _percent(change.then), _percent(change.now)
        lines.append(f"  {figures.model:<{width}}  compliance {then} → {now}{delta}")
    lines.append("  " + flips_line(changes.regressions, "regression", "pass → fail"))
    lines.append("  " + flips_line(changes.fixes, "fix", "fail → pass"))
    return lines


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}%"


def changes_markdown(changes: EditChanges, level: int = 1, title: str = "") -> str:
    """The edit's section at heading `level` (1: the whole of changes.md)."""
    h = "#" * level
    sub = "#" * (level + 1)
    title = title or f"What changed since version {changes.previous}"
    counts = [f"- **{k}:** {text(v)}" for k, v in count_lines(changes)]
    figures = figures_section(changes.diff)
    figures_body = (
        table(figures.header, ([cell(v) for v in row] for row in figures.rows))
        if figures.rows
        else f"_{text(figures.empty)}_"
    )
    parts = [
        f"{h} {text(title)}",
        "\n".join(counts),
        f"{sub} Prompt diff\n\n"
        + (fenced(changes.edit.prompt_diff, "diff") if changes.edit.prompt_diff else "_none_"),
        f"{sub} Rules added, retired and reworded\n\n{_rules(changes)}",
        f"{sub} Tests added, retired and flagged\n\n{_tests(changes)}",
        f"{sub} {figures.title}, then → now\n\n{figures_body}",
        f"{sub} Regressions (pass → fail)\n\n"
        + _flipped(changes.regressions, level + 2, WORST_FIRST),
        f"{sub} Fixes (fail → pass)\n\n" + _flipped(changes.fixes, level + 2, LARGEST_FIRST),
    ]
    return "\n\n".join(parts)


def _rules(changes: EditChanges) -> str:
    rows = [["added", cell(r.id), cell(r.text)] for r in changes.rules_added]
    rows += [["retired", cell(r.id), cell(r.text)] for r in changes.rules_retired]
    rows += [
        ["reworded", cell(r.rule_id), cell(r.now if r.then == r.now else f"{r.then} → {r.now}")]
        for r in changes.rules_reworded
    ]
    if not rows:
        return f"_none; {changes.rules_kept} kept as they were_"
    return table(["change", "rule", "text"], rows)


def _tests(changes: EditChanges) -> str:
    def row(kind: str, test: Test) -> list[str]:
        rule = changes.rule_text(test.rule_id) or "-"
        inputs = inputs_text(test.inputs, INPUT_LIMIT)
        return [kind, cell(test.id), cell(excerpt(rule, 100)), cell(inputs)]

    rows = [row("added", t) for t in changes.tests_added]
    rows += [row("retired", t) for t in changes.tests_retired]
    rows += [row("flagged", t) for t in changes.tests_flagged]
    if not rows:
        return f"_none; {changes.tests_kept} kept_"
    return table(["change", "test", "rule", "inputs"], rows)


def _flipped(flipped: list[Flipped], level: int, order: str) -> str:
    if not flipped:
        return "_none_"
    h = "#" * level
    parts = [order]
    for item in flipped:
        parts.append(f"{h} {text(item.test_id)} on {text(', '.join(item.models))}")
        said = [f"- **Rule:** {text(item.rule or '-')}", f"- **Inputs:** {text(item.inputs)}"]
        said.append(f"- **Pass rate of the test, then → now:** {item.moved:+.1f} points")
        parts.append("\n".join(said))
        rows = [
            [cell(c.model), str(c.run_index), cell(c.output_then), cell(c.output_now)]
            for c in item.cells
        ]
        parts.append(table(["model", "run", "output then", "output now"], rows))
    return "\n\n".join(parts)


def write_changes(changes: EditChanges | None, folder: Path) -> Path | None:
    """Write `changes.md` into `folder`; without an edit, remove one an earlier version
    of the run wrote (it would describe another version's edit)."""
    path = folder / CHANGES_FILE
    if changes is None:
        path.unlink(missing_ok=True)
        return None
    title = f"What changed: version {changes.previous} → {changes.version}"
    body = changes_markdown(changes, 1, title) + "\n"
    path.write_text(scrub(body, shapes=False), encoding="utf-8")
    return path
