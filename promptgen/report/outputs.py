"""Human-readable files written next to context.json."""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from pathlib import Path

from promptgen.context import Context, save_context
from promptgen.csvcells import row as cells
from promptgen.report.coverage import behaviour_line
from promptgen.report.coverage import summary_line as coverage_line
from promptgen.report.review import tests_document
from promptgen.secrets import scrub

TEST_COLUMNS = (
    "id",
    "origin",
    "scenario",
    "rule_id",
    "inverse",
    "behaviours",  # ids of the behaviours the test exercises (rules.md lists them)
    "valid",
    "inputs",
    "expected_output",
    "expected_class",
    "reasoning",
    "reference",  # where accuracy's reference comes from (Test.reference)
)


def _cell(value: object) -> str:
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return " ".join(map(str, value))
    return "" if value is None else str(value)


def rules_markdown(ctx: Context) -> str:
    inverse = {r.inverse_of: r for r in ctx.inverse_rules}
    tests = Counter(t.rule_id for t in ctx.tests if t.rule_id)
    notes = ctx.stage("tests").notes
    lines = [f"# Rules: {ctx.prompt.name}", ""]
    if ctx.intent:
        lines += [f"Intent: {ctx.intent}", ""]
    if line := coverage_line(ctx):
        lines += [line.replace("coverage     ", "Coverage: ", 1) + ".", ""]
    lines += [
        "| id | rule | tests | inverse rule | tests | grounded |",
        "|---|---|---|---|---|---|",
    ]
    for rule in ctx.rules:
        inv = inverse.get(rule.id)
        grounded = {True: "yes", False: "**no**", None: "not checked"}[rule.grounded]
        if rule.grounded_reason:
            grounded += f": {rule.grounded_reason}"
        cells = [
            f"`{rule.id}`",
            rule.text,
            _tests_cell(rule.id, tests, notes),
            f"{inv.text} (`{inv.id}`)" if inv else "(none)",
            _tests_cell(inv.id, tests, notes) if inv else "",
            grounded,
        ]
        lines.append("| " + " | ".join(_md(c) for c in cells) + " |")
    return "\n".join(lines) + "\n" + behaviours_markdown(ctx)


KIND_NAMES = {
    "class": "output class",
    "condition": "condition",
    "criterion": "criterion",
    "content": "content",
    "temptation": "temptation",
    "guidance": "author's case",
    "variety": "boundary",
    "model": "found by the model",
}


def behaviours_markdown(ctx: Context) -> str:
    """The behaviours the suite must exercise, each with its test count or the reason
    it has none."""
    if not ctx.behaviours:
        return ""
    counts = Counter(b for t in ctx.tests for b in t.behaviours)
    notes = ctx.stage("tests").notes
    lines = ["", "## Behaviours", ""]
    if line := behaviour_line(ctx):
        said = line.replace("behaviours   ", "Behaviours: ", 1).replace("in rules.md", "below")
        lines += [said + ".", ""]
    lines += ["| behaviour | kind | expected | tests |", "|---|---|---|---|"]
    for b in ctx.behaviours:
        if counts[b.id]:
            tests = str(counts[b.id])
        else:
            why = [v for k, v in notes.items() if k.split("|", 1)[0] == b.id]
            tests = "**0**" + (f": {why[0]}" if why else "")
        expected = b.expected_output or b.expected_class or ""
        cells = [b.text, KIND_NAMES.get(b.kind, b.kind), expected, tests]
        lines.append("| " + " | ".join(_md(c) for c in cells) + " |")
    return "\n".join(lines) + "\n"


def _tests_cell(rule_id: str, tests: Counter[str], notes: dict[str, str]) -> str:
    """How many tests target the rule, or why it has none (the tests stage's notes, keyed
    by rule id, or by rule id and scenario)."""
    if tests[rule_id]:
        return str(tests[rule_id])
    why = [v for k, v in notes.items() if k == rule_id or k.startswith(f"{rule_id}|")]
    return "**0**" + (f": {why[0]}" if why else "")


def _md(text: str) -> str:
    """A Markdown table cell: one line, its pipes escaped."""
    return text.replace("|", "\\|").replace("\n", " ")


def tests_csv(ctx: Context) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(cells(TEST_COLUMNS))
    for test in ctx.tests:
        writer.writerow(cells(_cell(getattr(test, c)) for c in TEST_COLUMNS))
    return out.getvalue()


def tests_markdown(ctx: Context) -> str:
    rules = {r.id: r for r in ctx.all_rules}
    behaviours = {b.id: b for b in ctx.behaviours}
    lines = [f"# Tests: {ctx.prompt.name}", ""]
    lines += [
        "| # | origin | scenario | rule | behaviour | valid | inputs | expected output "
        "| reference |"
    ]
    lines += ["|---|---|---|---|---|---|---|---|---|"]
    for i, test in enumerate(ctx.tests, start=1):
        rule = rules.get(test.rule_id or "")
        rule_text = ("(inverse) " if test.inverse else "") + (rule.text if rule else "")
        valid = {True: "yes", False: "**no**", None: ""}[test.valid]
        said = "; ".join(behaviours[b].text for b in test.behaviours if b in behaviours)
        expected = test.expected_output or (
            f"(class: {test.expected_class})" if test.expected_class else ""
        )
        cells = [
            str(i),
            test.origin,
            test.scenario or "",
            rule_text,
            said,
            valid,
            _cell(test.inputs),
            expected,
            test.reference,
        ]
        lines.append(
            "| " + " | ".join(c.replace("|", "\\|").replace("\n", "<br>") for c in cells) + " |"
        )
    return "\n".join(lines) + "\n"


def write_outputs(ctx: Context, folder: Path) -> list[Path]:
    """context.json plus the readable files; returns what was written."""
    folder.mkdir(parents=True, exist_ok=True)
    files = {
        "intent.txt": (ctx.intent or "") + "\n",
        "input_spec.txt": (ctx.input_spec or "") + "\n",
        "rules.md": rules_markdown(ctx),
        # the tests and the rules they target (and negate), as tests.filtered.json: a
        # later run reads both back (--tests); a plain list (older runs) still loads
        "tests.json": json.dumps(tests_document(ctx, ctx.tests), indent=2, ensure_ascii=False)
        + "\n",
        "tests.csv": tests_csv(ctx),
        "tests.md": tests_markdown(ctx),
    }
    written = [save_context(ctx, folder / "context.json")]
    for name, text in files.items():
        path = folder / name
        path.write_text(scrub(text, shapes=False), encoding="utf-8")  # as context.json
        written.append(path)
    return written
