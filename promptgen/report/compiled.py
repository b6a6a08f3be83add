"""Rules compiled to deterministic checks (--compile-rules), as the reports and the
console summary show them: per output rule, the check proposed, whether it was kept,
and how often it agreed with the compliance judge; and the judge calls a kept check
saved by standing in for the judge (--judge-only-when-unsure)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from html import escape

from promptgen.context import Context
from promptgen.evaluation.compiled import MIN_AGREEMENT, MIN_RUNS
from promptgen.report.markdown_text import cell, table, text
from promptgen.results import CompiledRule, Rule

STATUS = {
    "kept": "kept",
    "disagrees": "dropped: disagrees with the judge",
    "too-few-runs": "not kept yet: too few judged runs",
    "invalid": "dropped: not a valid check",
    "none": "no check fits",
}
NOTE = (
    f"A proposal is kept when it agrees with the compliance judge on at least "
    f"{100 * MIN_AGREEMENT:.0f}% of at least {MIN_RUNS} judged runs of the rule's tests "
    "(docs/compiled-rules.md)."
)


@dataclass(frozen=True)
class Row:
    rule: Rule
    record: CompiledRule

    @property
    def check(self) -> str:
        if self.record.check is None:
            return self.record.proposed or "-"
        ((name, value),) = self.record.check.items()
        shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        return f"{name}={shown}"

    @property
    def agreement(self) -> str:
        share = self.record.agreement
        if share is None:
            return "-"
        return f"{100 * share:.0f}% ({self.record.agreed}/{self.record.compared})"


def rows(ctx: Context) -> list[Row]:
    rules = {r.id: r for r in ctx.rules}
    return [Row(rules[c.rule_id], c) for c in ctx.compiled_rules if c.rule_id in rules]


def summary_line(ctx: Context) -> str | None:
    """The console summary's line (None when no rule was compiled)."""
    found = rows(ctx)
    if not found:
        return None
    kept = sum(r.record.kept for r in found)
    return (
        f"compiled     {kept} of {len(found)} rules kept as checks; "
        f"{ctx.judge_calls_saved} judge calls saved"
    )


def _headline(ctx: Context, found: list[Row]) -> str:
    kept = sum(r.record.kept for r in found)
    return (
        f"{kept} of {len(found)} output rules compiled to a kept check; "
        f"{ctx.judge_calls_saved} compliance judge calls saved by a check standing in."
    )


def compiled_markdown(ctx: Context) -> str:
    """The report's "Compiled rules" section ("" when no rule was compiled)."""
    found = rows(ctx)
    if not found:
        return ""
    header = ["Rule", "Text", "Check", "Status", "Agreement", "Reason"]
    body = [
        [cell(r.record.name), cell(r.rule.text), cell(r.check), STATUS[r.record.status],
         r.agreement, cell(r.record.reason)]
        for r in found
    ]  # fmt: skip
    return "\n\n".join(
        ["## Compiled rules", text(_headline(ctx, found)), table(header, body), text(NOTE)]
    )


def compiled_html(ctx: Context) -> list[str]:
    """The report's "Compiled rules" section, as a list of zero or one sections."""
    found = rows(ctx)
    if not found:
        return []
    css = {"kept": "good", "disagrees": "bad", "invalid": "bad"}
    body = "".join(
        f'<tr><td class="id">{escape(r.record.name)}</td><td>{escape(r.rule.text)}</td>'
        f"<td><code>{escape(r.check)}</code></td>"
        f'<td class="{css.get(r.record.status, "")}">{escape(STATUS[r.record.status])}</td>'
        f'<td class="num">{escape(r.agreement)}</td><td>{escape(r.record.reason)}</td></tr>'
        for r in found
    )
    head = (
        "<tr><th>Rule</th><th>Text</th><th>Check</th><th>Status</th><th>Agreement</th>"
        "<th>Reason</th></tr>"
    )
    parts = [
        f"<p>{escape(_headline(ctx, found))}</p>",
        f"<table><thead>{head}</thead><tbody>{body}</tbody></table>",
        f'<p class="hint">{escape(NOTE)}</p>',
    ]
    content = "\n".join(parts)
    return [f'<section id="compiled"><h2>Compiled rules</h2>\n{content}\n</section>']
