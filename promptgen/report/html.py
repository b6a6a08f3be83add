"""`report.html`: one self-contained page (inline CSS, inline JS, inline SVG).

Every value from the context is untrusted and goes through `html.escape`. As a second
line of defence the Content-Security-Policy forbids every network fetch and runs only
the one script whose hash it names, so injected markup could not execute anyway.
"""

from __future__ import annotations

import base64
import hashlib
from functools import cache
from html import escape
from pathlib import Path

from promptgen.context import Context
from promptgen.progress import usage_text
from promptgen.report.changes import EditChanges
from promptgen.report.changes_html import changes_html
from promptgen.report.compiled import compiled_html
from promptgen.report.findings import count_tests, shown_tests
from promptgen.report.html_charts import compliance_chart, heatmap
from promptgen.report.html_sections import (
    failures_section,
    groundedness_section,
    groundtruth_section,
    invalid_section,
)
from promptgen.report.html_tables import results_table, tests_table
from promptgen.report.markdown import UNDECIDED_NOTE
from promptgen.report.mutation import mutation_html
from promptgen.report.overview import error_rate, overall_compliance
from promptgen.report.safety import models_said, safety_html
from promptgen.report.stats import (
    error_kind,
    error_text,
    faulty,
    number,
    percent,
    undecided_groups,
    verdict,
)

ASSETS = Path(__file__).parent
NO_RUNS = "No evaluation yet: this context has no test runs."


@cache
def asset(name: str) -> str:
    return (ASSETS / name).read_text(encoding="utf-8")


def content_security_policy(script: str) -> str:
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    return (
        "default-src 'none'; style-src 'unsafe-inline'; "
        f"script-src 'sha256-{digest}'; img-src data:; base-uri 'none'; form-action 'none'"
    )


def report_html(ctx: Context, changes: EditChanges | None = None) -> str:
    """The page; an edited prompt's run opens with what the edit did (`changes`)."""
    script = asset("report.js")
    title = f"promptgen report: {ctx.prompt.name}"
    sections = [_header(ctx)]
    if changes is not None:
        title_changes = f"What changed since version {changes.previous}"
        sections.append(_section("changes", title_changes, changes_html(changes)))
    sections += [_section("summary", "Summary", _summary(ctx)), *safety_html(ctx)]
    if ctx.test_runs:
        sections += [
            _section("chart", "Compliance per model", compliance_chart(ctx)),
            _section("rules", "Pass rate per rule and model", heatmap(ctx)),
            _section("failing", "Failing outputs by rule", failures_section(ctx)),
            *compiled_html(ctx),
            _section("results", "Results", _results(ctx)),
            _section("errors", "Errors", _errors(ctx)),
            *_undecided(ctx),
        ]
    elif ctx.all_rules:
        sections.append(_section("rules", "Rules", heatmap(ctx)))
    sections += [
        _section("groundtruth", "Groundtruth", groundtruth_section(ctx)),
        _section("groundedness", "Rule groundedness", groundedness_section(ctx)),
        _section("invalid", "Invalid tests", invalid_section(ctx)),
        mutation_html(ctx),
        _section("tests", "Tests", tests_table(ctx) if shown_tests(ctx) else "<p>No tests.</p>"),
        _section("prompt", "Prompt", _prompt(ctx)),
    ]
    body = "\n".join(sections)
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">\n'
        '<meta http-equiv="Content-Security-Policy" '
        f'content="{escape(content_security_policy(script))}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="referrer" content="no-referrer">\n'
        '<link rel="icon" href="data:,">\n'
        f"<title>{escape(title)}</title>\n"
        f"<style>{asset('report.css')}</style>\n"
        f"</head><body>\n{body}\n<script>{script}</script>\n</body></html>\n"
    )


def _section(anchor: str, title: str, content: str) -> str:
    return f'<section id="{anchor}"><h2>{escape(title)}</h2>\n{content}\n</section>'


def _header(ctx: Context) -> str:
    prompt = ctx.prompt
    lines = [f"<header><h1>promptgen report: {escape(prompt.name)}</h1>"]
    if prompt.description:
        lines.append(f'<p class="lead">{escape(prompt.description)}</p>')
    meta = [f"run {ctx.run_id}", f"promptgen {ctx.promptgen_version}"]
    if prompt.source:
        meta.insert(0, prompt.source)
    lines.append(f'<p class="meta">{" · ".join(escape(m) for m in meta)}</p></header>')
    return "\n".join(lines)


def _summary(ctx: Context) -> str:
    runs = ctx.test_runs
    usage = ctx.usage.total
    verdicts = [verdict(r) for r in runs]
    counts = count_tests(ctx)
    cards = [
        ("Models", str(len(ctx.models_run)), models_said(ctx)),
        ("Tests", str(counts.total), f"{counts.run} run, {counts.invalid} invalid"),
        ("Runs", str(len(runs)), f"{verdicts.count(None)} without a verdict"),
        (
            "Compliance",
            percent(overall_compliance(ctx)),
            f"{verdicts.count(True)} ok, {verdicts.count(False)} failing",
        ),
        (
            "Errors",
            str(sum(r.error is not None or r.fault is not None for r in runs)),
            f"{number(error_rate(ctx))}% of runs, {faulty(runs)} faulty outputs (not judged)",
        ),
        ("Cost", f"${usage.cost:.4f}", usage_text(usage)),
    ]
    html = "".join(
        f'<div class="card"><div class="label">{escape(label)}</div>'
        f'<div class="value">{escape(value)}</div><div class="note">{escape(note)}</div></div>'
        for label, value, note in cards
    )
    empty = "" if runs else f'<p class="empty">{NO_RUNS}</p>'
    headline = f'<p id="headline" class="headline">{escape(counts.headline())}</p>'
    return f'{headline}<div class="cards">{html}</div>{_refusals(ctx)}{empty}'


def _refusals(ctx: Context) -> str:
    """The schemas a server refused, as report.md's summary lists them."""
    if not ctx.schema_refusals:
        return ""
    items = "".join(f"<li>{escape(r.said())}</li>" for r in ctx.schema_refusals)
    return f'<p class="hint">Schemas refused:</p><ul class="refusals">{items}</ul>'


def _results(ctx: Context) -> str:
    controls = (
        '<div class="controls"><input id="filter" type="search" '
        'placeholder="Filter runs (all words must match)" aria-label="Filter runs">'
        '<label><input id="failing-only" type="checkbox"> failing only</label>'
        '<span id="shown" aria-live="polite"></span></div>'
    )
    note = '<p class="hint">Click a column header to sort; hover an output to see it whole.</p>'
    return controls + note + '<div class="scroll">' + results_table(ctx) + "</div>"


def _errors(ctx: Context) -> str:
    errored = [r for r in ctx.test_runs if r.error is not None or r.fault is not None]
    if not errored:
        return "<p>None.</p>"
    rows = "".join(
        f'<tr data-fault="{escape(r.fault or "")}"><td><code>{escape(r.test_id)}</code></td>'
        f"<td>{escape(r.model)}</td><td>{r.run_index}</td><td>{escape(error_kind(r))}</td>"
        f"<td><pre>{escape(error_text(r))}</pre></td></tr>"
        for r in errored
    )
    head = "<tr><th>Test</th><th>Model</th><th>Run</th><th>Kind</th><th>Error</th></tr>"
    return f'<table class="errors"><thead>{head}</thead><tbody>{rows}</tbody></table>'


def _undecided(ctx: Context) -> list[str]:
    """The section of every (run, metric) that could not decide, as in report.md; none
    when every metric decided."""
    groups = undecided_groups(ctx)
    if not groups:
        return []
    items = "".join(f"<li>{escape(g.line())}</li>" for g in groups)
    rows = "".join(
        f"<tr><td><code>{escape(i.run.test_id)}</code></td><td>{escape(i.run.model)}</td>"
        f"<td>{i.run.run_index}</td><td>{escape(i.metric)}</td>"
        f"<td>{escape(i.reason) if n == 0 else 'as above'}</td></tr>"
        for g in groups
        for n, i in enumerate(g.items)
    )
    head = "<tr><th>Test</th><th>Model</th><th>Run</th><th>Metric</th><th>Reason</th></tr>"
    body = (
        f"<p>{escape(UNDECIDED_NOTE)}</p><ul>{items}</ul>"
        f'<table class="undecided"><thead>{head}</thead><tbody>{rows}</tbody></table>'
    )
    return [_section("undecided", "Undecided", body)]


def _prompt(ctx: Context) -> str:
    messages = "".join(
        f'<div class="message"><div class="role">{escape(m.role)}</div>'
        f"<pre>{escape(m.content)}</pre></div>"
        for m in ctx.prompt.messages
    )
    parts = [messages or "<p>No messages.</p>"]
    if ctx.intent:
        parts.append(f"<h3>Intent</h3><p>{escape(ctx.intent)}</p>")
    if ctx.input_spec:
        parts.append(f"<h3>Input specification</h3><pre>{escape(ctx.input_spec)}</pre>")
    return "\n".join(parts)
