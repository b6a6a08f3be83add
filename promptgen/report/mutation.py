"""The mutation score as people read it: a table in the terminal, `mutation.md`, and a
section of report.md and report.html, each listing the surviving mutants with their
diffs (the places the suite does not protect)."""

from __future__ import annotations

import re
from html import escape

from promptgen.context import Context
from promptgen.results import Mutant, MutantVerdict, MutationResults, MutationScore

MUTATION_FILE = "mutation.md"


def percent(score: MutationScore) -> str:
    value = score.percent
    return "-" if value is None else f"{value:.0f}%"


def rule_label(ctx: Context, rule_id: str) -> str:
    if not rule_id:
        return "(tests without a rule)"
    rule = ctx.rule(rule_id)
    return rule.text if rule is not None else rule_id


def score_rows(ctx: Context) -> list[tuple[str, str, str, str]]:
    """(what, killed, counted, score) rows: overall first, then one per rule."""
    state = ctx.mutation
    if state is None:
        return []
    rows = [("all mutants", str(state.score.killed), str(state.score.counted),
             percent(state.score))]  # fmt: skip
    for rule_id, score in state.by_rule.items():
        rows.append((rule_label(ctx, rule_id), str(score.killed), str(score.counted),
                     percent(score)))  # fmt: skip
    return rows


def _verdicts(state: MutationResults) -> list[tuple[Mutant, MutantVerdict | None]]:
    verdicts = {v.mutant_id: v for v in state.verdicts}
    return [(m, verdicts.get(m.id)) for m in state.mutants]


def status_counts(state: MutationResults) -> dict[str, int]:
    counts = {"killed": 0, "survived": 0, "equivalent": 0, "incomplete": 0}
    for _, verdict in _verdicts(state):
        counts[verdict.status if verdict else "incomplete"] += 1
    return counts


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def mutation_markdown(ctx: Context, heading: str = "#") -> str:
    """The mutation section (a whole mutation.md with heading "#")."""
    state = ctx.mutation
    if state is None:
        return ""
    counts = status_counts(state)
    lines = [
        f"{heading} Mutation testing",
        "",
        f"Mutation score: **{percent(state.score)}** ({state.score.killed} of "
        f"{state.score.counted} mutants killed; {counts['equivalent']} equivalent, "
        f"{counts['incomplete']} incomplete; models: {', '.join(state.models)}).",
        "",
        "| rule | killed | mutants | score |",
        "|---|---:|---:|---:|",
        *(f"| {_cell(a)} | {b} | {c} | {d} |" for a, b, c, d in score_rows(ctx)),
        "",
        f"{heading}# Mutants",
        "",
        "| id | operator | change | status | killed by |",
        "|---|---|---|---|---|",
    ]
    for mutant, verdict in _verdicts(state):
        status = verdict.status if verdict else "incomplete"
        killers = ", ".join(verdict.killed_by) if verdict else ""
        lines.append(
            f"| {mutant.id} | {mutant.operator} | {_cell(mutant.description)} | {status} "
            f"| {killers} |"
        )
    survivors = [m for m, v in _verdicts(state) if v and v.status == "survived"]
    lines += ["", f"{heading}# Surviving mutants", ""]
    if not survivors:
        lines.append("None: every mutant counted was killed.")
    for mutant in survivors:
        fence = "`" * max(3, 1 + max(map(len, re.findall("`+", mutant.diff)), default=0))
        lines += [f"`{mutant.id}` ({mutant.operator}): {_cell(mutant.description)}", "",
                  f"{fence}diff", mutant.diff, fence, ""]  # fmt: skip
    return "\n".join(lines).rstrip() + "\n"


def mutation_html(ctx: Context) -> str:
    """The report.html section ("" without a mutation run)."""
    state = ctx.mutation
    if state is None:
        return ""
    rows = "".join(
        "<tr>" + "".join(f"<td>{escape(v)}</td>" for v in row) + "</tr>" for row in score_rows(ctx)
    )
    survivors = [m for m, v in _verdicts(state) if v and v.status == "survived"]
    diffs = (
        "".join(
            f"<h3><code>{escape(m.id)}</code> ({escape(m.operator)}): {escape(m.description)}</h3>"
            f"<pre>{escape(m.diff)}</pre>"
            for m in survivors
        )
        or "<p>None: every mutant counted was killed.</p>"
    )
    counts = status_counts(state)
    return (
        '<section id="mutation"><h2>Mutation testing</h2>\n'
        f"<p>Mutation score <strong>{escape(percent(state.score))}</strong>: "
        f"{state.score.killed} of {state.score.counted} mutants killed "
        f"({counts['equivalent']} equivalent, {counts['incomplete']} incomplete).</p>\n"
        "<table><thead><tr><th>rule</th><th>killed</th><th>mutants</th><th>score</th>"
        f"</tr></thead><tbody>{rows}</tbody></table>\n"
        f"<h3>Surviving mutants ({len(survivors)})</h3>\n{diffs}\n</section>"
    )
