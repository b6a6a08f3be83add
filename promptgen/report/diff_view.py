"""`promptgen diff` as people read it: rich tables on stdout and `diff.md`.

Both are drawn from the same sections, so the terminal and the file never disagree.
Names, rule texts and outputs come from the contexts: untrusted, so they are escaped in
Markdown and never read as rich markup.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.text import Text

from promptgen.report.diff import Change, DiffResult, Flip, Side
from promptgen.report.markdown_text import cell, table, text
from promptgen.report.stats import excerpt
from promptgen.report.terminal import print_table
from promptgen.secrets import scrub
from promptgen.words import counted

DIFF_FILE = "diff.md"
WRAPPED = ("rule", "what", "output now")  # text; model names, ids and figures are never cut
NUMBERS = ("then", "now", "delta", "run")


@dataclass
class Section:
    """One table of the diff; `empty` is said instead when it has no rows."""

    title: str
    header: list[str]
    rows: list[list[str]] = field(default_factory=list)
    empty: str = "none"


def figure(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def delta(change: Change) -> str:
    value = change.delta
    return "-" if value is None else f"{value:+.1f}"


def headline(result: DiffResult) -> list[str]:
    """What is compared with what, the prompt warning, and the counts in one line each."""
    lines = [_side("A (then)", result.then), _side("B (now)", result.now)]
    lines += [f"warning: {w}" for w in result.warnings]
    lines.append(
        f"tests: {len(result.tests_added)} added, {len(result.tests_removed)} removed, "
        f"{len(result.tests_changed)} changed; runs in both: {result.runs_compared}, "
        f"pass → fail: {len(result.pass_to_fail)}, fail → pass: {len(result.fail_to_pass)}"
    )
    if result.unchanged:
        lines.append("no change: every figure, test and verdict is the same")
    return lines


def _side(label: str, side: Side) -> str:
    models = ", ".join(side.models) or "no models"
    return (
        f"{label}: {side.path}: prompt {side.prompt} ({side.prompt_hash[:12] or 'no hash'}), "
        f"run {side.run_id}, {counted(side.tests, 'test')}, {counted(side.runs, 'run')} on {models}"
    )


def sections(result: DiffResult) -> list[Section]:
    return [figures_section(result), _rules(result), _tests(result), *_flips(result)]


def figures_section(result: DiffResult) -> Section:
    section = Section(
        "Compliance and metric averages per model (%)",
        ["model", "figure", "then", "now", "delta"],
        empty="no runs in either context",
    )
    for figures in result.overall:
        named = {"compliance": figures.compliance, **figures.metrics}
        for name, change in named.items():
            row = [figures.model, name, figure(change.then), figure(change.now), delta(change)]
            section.rows.append(row)
    return section


def _rules(result: DiffResult) -> Section:
    section = Section(
        "Compliance per rule and model (%)",
        ["rule", "id", "model", "then", "now", "delta"],
        empty="no rule has a judged run in either context",
    )
    for rule in result.rules:
        label = ("(inverse) " if rule.inverse else "") + excerpt(rule.text, 60)
        if rule.status != "kept":
            label += f" [{rule.status}]"
        for model, change in rule.by_model.items():
            if (change.then, change.now) != (None, None):
                row = [label, rule.rule_id, model, figure(change.then), figure(change.now)]
                section.rows.append([*row, delta(change)])
    return section


def _tests(result: DiffResult) -> Section:
    section = Section("Tests added, removed or changed", ["test", "change", "what"])
    for kind, refs in (("added", result.tests_added), ("removed", result.tests_removed)):
        for ref in refs:
            rule = f"rule: {excerpt(ref.rule, 60)}; " if ref.rule else ""
            section.rows.append([ref.test_id, kind, f"{rule}inputs: {ref.inputs}"])
    for change in result.tests_changed:
        what = "; ".join(f"{f.name}: {_value(f.then)} → {_value(f.now)}" for f in change.fields)
        section.rows.append([change.test_id, "changed", what])
    return section


def _value(value: object) -> str:
    """A judgement as shown: strings quoted, so an empty one is still seen."""
    if value is None:
        return "-"
    return excerpt(repr(value), 60) if isinstance(value, str) else str(value)


def _flips(result: DiffResult) -> list[Section]:
    header = ["test", "model", "run", "rule", "output now"]

    def rows(flips: list[Flip]) -> list[list[str]]:
        return [
            [f.test_id, f.model, str(f.run_index), excerpt(f.rule, 60) or "-", f.output_now]
            for f in flips
        ]

    return [
        Section("Runs that went from pass to fail", header, rows(result.pass_to_fail)),
        Section("Runs that went from fail to pass", header, rows(result.fail_to_pass)),
    ]


def diff_markdown(result: DiffResult) -> str:
    names = dict.fromkeys([result.then.prompt, result.now.prompt])
    parts = [f"# promptgen diff: {text(' → '.join(names))}"]
    parts.append("\n".join(f"- {text(line)}" for line in headline(result)))
    for section in sections(result):
        body = (
            table(section.header, ([cell(v) for v in row] for row in section.rows))
            if section.rows
            else f"_{text(section.empty)}_"
        )
        parts.append(f"## {section.title}\n\n{body}")
    return "\n\n".join(parts) + "\n"


def print_diff(result: DiffResult, console: Console | None = None) -> None:
    console = console or Console()
    for line in headline(result):
        console.print(_shown(line), soft_wrap=True)  # one line each: easy to grep
    for section in sections(result):
        if not section.rows:
            console.print(_shown(f"\n{section.title}: {section.empty}"))
            continue
        rows = [list(map(_shown, row)) for row in section.rows]
        header = section.header
        print_table(section.title, header, rows, wrap=WRAPPED, right=NUMBERS, console=console)


def _shown(value: str) -> Text:
    """Text, never rich markup; a known key an output echoed is blanked, as in the files."""
    return Text(scrub(value, shapes=False))


def write_diff(result: DiffResult, path: Path) -> Path:
    """Write `diff.md`; a known key an output echoed is blanked, as in every report."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(scrub(diff_markdown(result), shapes=False), encoding="utf-8")
    return path
