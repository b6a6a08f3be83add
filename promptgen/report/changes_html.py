"""report.html's first section when the prompt was edited: what the edit did
(report/changes.py), as changes.md says it. Every value goes through `html.escape`."""

from __future__ import annotations

from html import escape

from promptgen.report.changes import INPUT_LIMIT, EditChanges, Flipped
from promptgen.report.changes_view import LARGEST_FIRST, WORST_FIRST, count_lines
from promptgen.report.diff_view import figures_section
from promptgen.report.findings import inputs_text
from promptgen.report.stats import excerpt


def _table(head: list[str], rows: list[list[str]], css: str = "") -> str:
    """A table from escaped cells."""
    cells = "".join(f"<th>{escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    klass = f' class="{css}"' if css else ""
    return f"<table{klass}><thead><tr>{cells}</tr></thead><tbody>{body}</tbody></table>"


def changes_html(changes: EditChanges) -> str:
    """The section's content (its heading is the report's)."""
    items = "".join(f"<li><b>{escape(k)}:</b> {escape(v)}</li>" for k, v in count_lines(changes))
    diff = changes.edit.prompt_diff
    parts = [
        f'<ul class="changes">{items}</ul>',
        "<h3>Prompt diff</h3>",
        f'<pre class="diff">{escape(diff)}</pre>' if diff else "<p>None.</p>",
        "<h3>Rules added, retired and reworded</h3>",
        _rules(changes),
        "<h3>Tests added, retired and flagged</h3>",
        _tests(changes),
    ]
    figures = figures_section(changes.diff)
    parts.append(f"<h3>{escape(figures.title)}, then → now</h3>")
    rows = [[escape(v) for v in row] for row in figures.rows]
    parts.append(_table(figures.header, rows) if rows else f"<p>{escape(figures.empty)}</p>")
    parts += ["<h3>Regressions (pass → fail)</h3>", _flipped(changes.regressions, WORST_FIRST)]
    parts += ["<h3>Fixes (fail → pass)</h3>", _flipped(changes.fixes, LARGEST_FIRST)]
    return "\n".join(parts)


def _rules(changes: EditChanges) -> str:
    rows = [["added", _id(r.id), escape(r.text)] for r in changes.rules_added]
    rows += [["retired", _id(r.id), escape(r.text)] for r in changes.rules_retired]
    for r in changes.rules_reworded:
        shown = r.now if r.then == r.now else f"{r.then} → {r.now}"
        rows.append(["reworded", _id(r.rule_id), escape(shown)])
    if not rows:
        return f"<p>None; {changes.rules_kept} kept as they were.</p>"
    return _table(["change", "rule", "text"], rows)


def _tests(changes: EditChanges) -> str:
    rows = []
    for kind, tests in (
        ("added", changes.tests_added),
        ("retired", changes.tests_retired),
        ("flagged", changes.tests_flagged),
    ):
        for test in tests:
            rule = excerpt(changes.rule_text(test.rule_id) or "-", 100)
            inputs = inputs_text(test.inputs, INPUT_LIMIT)
            rows.append([kind, _id(test.id), escape(rule), escape(inputs)])
    if not rows:
        return f"<p>None; {changes.tests_kept} kept.</p>"
    return _table(["change", "test", "rule", "inputs"], rows)


def _flipped(flipped: list[Flipped], order: str) -> str:
    if not flipped:
        return "<p>None.</p>"
    parts = [f'<p class="hint">{escape(order)}</p>']
    for item in flipped:
        parts.append(
            f"<h4><code>{escape(item.test_id)}</code> on {escape(', '.join(item.models))}</h4>"
            f"<p>Rule: {escape(item.rule or '-')}<br>Inputs: <code>{escape(item.inputs)}</code>"
            f"<br>Pass rate of the test, then → now: {item.moved:+.1f} points</p>"
        )
        rows = [
            [
                escape(c.model),
                str(c.run_index),
                f"<pre>{escape(c.output_then)}</pre>",
                f"<pre>{escape(c.output_now)}</pre>",
            ]
            for c in item.cells
        ]
        parts.append(_table(["model", "run", "output then", "output now"], rows))
    return "\n".join(parts)


def _id(value: str) -> str:
    return f"<code>{escape(value)}</code>"
