"""The test review as files: `test_review.md`, and `tests.filtered.json` (the N most
important tests), which a later run can read back as its test set."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from promptgen.context import Context
from promptgen.prompting import target_label
from promptgen.report.markdown import cell
from promptgen.results import Rule, Test
from promptgen.secrets import scrub

REVIEW_FILE = "test_review.md"
FILTERED_FILE = "tests.filtered.json"
_HARM_ORDER = {"high": 0, "medium": 1, "low": 2}


def _row(*cells: object) -> str:
    """A table row of untrusted values, escaped as in report.md (objects as JSON)."""
    shown = (json.dumps(c, ensure_ascii=False) if isinstance(c, dict) else c for c in cells)
    return "| " + " | ".join(cell(c) for c in shown) + " |"


def review_markdown(ctx: Context) -> str:
    """`test_review.md`: score, summary, failure modes, weaknesses, tests by importance."""
    lines = [f"# Test review: {ctx.prompt.name}", ""]
    review = ctx.review
    if review is None:
        return "\n".join([*lines, "No review yet: run with `--rate-tests`.", ""])
    score = f"**{review.quality_score}/10**" if review.quality_score else "not given"
    lines += [
        f"Quality score: {score}" + (f" (reviewed by `{review.model}`)" if review.model else "")
    ]
    shown = ctx.stage("review").counts
    if shown.get("left_out"):
        lines += ["", f"The review saw the first {shown['reviewed']} of {len(ctx.tests)} tests."]
    lines += ["", review.summary or "(no summary)", "", "## Likely failure modes", ""]
    if review.failure_modes:
        lines += ["| harm | failure mode |", "|---|---|"]
        ranked = sorted(review.failure_modes, key=lambda f: _HARM_ORDER[f.harm])
        lines += [_row(f.harm, f.description) for f in ranked]
    else:
        lines += ["(none given)"]
    lines += ["", "## Weaknesses of the tests", ""]
    lines += [f"- {' '.join(w.split())}" for w in review.weaknesses] or ["(none given)"]
    rated = sum(t.id in review.importance for t in ctx.tests)
    lines += ["", "## Tests by importance", "", f"{rated} of {len(ctx.tests)} tests rated.", ""]
    lines += ["| rank | importance | test | targets | inputs | why |", "|---|---|---|---|---|---|"]
    for rank, test in enumerate(filtered_tests(ctx, len(ctx.tests)), start=1):
        importance = review.importance.get(test.id)
        lines.append(
            _row(
                rank,
                "not rated" if importance is None else importance,
                test.id,
                target_label(ctx, test),
                test.inputs,
                review.notes.get(test.id, ""),
            )
        )
    return "\n".join(lines) + "\n"


def filtered_tests(ctx: Context, n: int, *, invalid: bool = True) -> list[Test]:
    """The n most important tests; ties keep collection order, unrated tests come last.
    With invalid=False, tests judged invalid are never picked."""
    importance = ctx.review.importance if ctx.review else {}
    pool = [t for t in ctx.tests if invalid or t.valid is not False]
    order = sorted(
        range(len(pool)),
        key=lambda i: (pool[i].id not in importance, -importance.get(pool[i].id, 0), i),
    )
    return [pool[i] for i in order[: max(n, 0)]]


def _rules_for(ctx: Context, tests: list[Test]) -> list[Rule]:
    """The rules `tests` target plus the rules those negate, so every `inverse_of` resolves."""
    wanted = {t.rule_id for t in tests if t.rule_id}
    wanted |= {r.inverse_of for r in ctx.all_rules if r.id in wanted and r.inverse_of}
    return [r for r in ctx.all_rules if r.id in wanted]


def tests_document(ctx: Context, tests: list[Test]) -> dict[str, Any]:
    """`tests` and the rules they need, as `tests.json` and `tests.filtered.json` hold
    them (`--tests FILE` reads them back, rules and all)."""
    return {
        "prompt": ctx.prompt.name,
        "prompt_hash": ctx.prompt_hash,
        "tests": [t.model_dump(mode="json") for t in tests],
        "rules": [r.model_dump(mode="json") for r in _rules_for(ctx, tests)],
    }


def filtered_document(ctx: Context, n: int) -> dict[str, Any]:
    """`tests.filtered.json`: the n most important valid tests and their rules."""
    return tests_document(ctx, filtered_tests(ctx, n, invalid=False))


def write_review_files(ctx: Context, folder: Path, filter_n: int | None) -> list[Path]:
    """`test_review.md`, and `tests.filtered.json` when filter_n is set; returns the paths."""
    folder.mkdir(parents=True, exist_ok=True)
    review = folder / REVIEW_FILE
    review.write_text(scrub(review_markdown(ctx), shapes=False), encoding="utf-8")
    written = [review]
    if filter_n is not None:
        filtered = folder / FILTERED_FILE
        text = json.dumps(filtered_document(ctx, filter_n), indent=2, ensure_ascii=False)
        filtered.write_text(scrub(text, shapes=False) + "\n", encoding="utf-8")
        written.append(filtered)
    return written
