"""The test review as files: `test_review.md`, and `tests.filtered.json` (the N most
important tests), which a later run can read back as its test set."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from promptgen.context import Context
from promptgen.errors import BadInputError
from promptgen.jsonio import read_json
from promptgen.report.markdown import cell
from promptgen.results import Rule, Test
from promptgen.stages.review import target_label

REVIEW_FILE = "test_review.md"
FILTERED_FILE = "tests.filtered.json"
_HARM_ORDER = {"high": 0, "medium": 1, "low": 2}
_SHAPES = "a JSON list of tests (tests.json) or an object with a 'tests' list (tests.filtered.json)"


class TestsFile(BaseModel):
    """The shape of `tests.filtered.json`: tests plus the rules they need."""

    __test__ = False
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    schema_ref: str | None = Field(None, alias="$schema", description="Optional schema link.")
    prompt: str | None = Field(None, description="Name of the prompt the tests are for.")
    prompt_hash: str | None = Field(None, description="Content hash of that prompt.")
    tests: list[Test]
    rules: list[Rule] = Field(
        default_factory=list, description="Rules the tests target, and the rules they negate."
    )


def filtered_file_schema() -> dict[str, Any]:
    schema = TestsFile.model_json_schema(by_alias=True)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "promptgen tests file"
    return schema


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


def filtered_tests(ctx: Context, n: int) -> list[Test]:
    """The n most important tests; ties keep collection order, unrated tests come last."""
    importance = ctx.review.importance if ctx.review else {}
    order = sorted(
        range(len(ctx.tests)),
        key=lambda i: (
            ctx.tests[i].id not in importance,
            -importance.get(ctx.tests[i].id, 0),
            i,
        ),
    )
    return [ctx.tests[i] for i in order[: max(n, 0)]]


def _rules_for(ctx: Context, tests: list[Test]) -> list[Rule]:
    """The rules `tests` target plus the rules those negate, so every `inverse_of` resolves."""
    wanted = {t.rule_id for t in tests if t.rule_id}
    wanted |= {r.inverse_of for r in ctx.all_rules if r.id in wanted and r.inverse_of}
    return [r for r in ctx.all_rules if r.id in wanted]


def filtered_document(ctx: Context, n: int) -> dict[str, Any]:
    tests = filtered_tests(ctx, n)
    return {
        "prompt": ctx.prompt.name,
        "prompt_hash": ctx.prompt_hash,
        "tests": [t.model_dump(mode="json") for t in tests],
        "rules": [r.model_dump(mode="json") for r in _rules_for(ctx, tests)],
    }


def write_review_files(ctx: Context, folder: Path, filter_n: int | None) -> list[Path]:
    """`test_review.md`, and `tests.filtered.json` when filter_n is set; returns the paths."""
    folder.mkdir(parents=True, exist_ok=True)
    review = folder / REVIEW_FILE
    review.write_text(review_markdown(ctx), encoding="utf-8")
    written = [review]
    if filter_n is not None:
        filtered = folder / FILTERED_FILE
        text = json.dumps(filtered_document(ctx, filter_n), indent=2, ensure_ascii=False)
        filtered.write_text(text + "\n", encoding="utf-8")
        written.append(filtered)
    return written


def load_tests_file(path: str | Path) -> tuple[list[Test], list[Rule]]:
    """Tests (and rules) from `tests.filtered.json` or a plain `tests.json` list."""
    path = Path(path)
    data = read_json(path, "tests file", f"fix the JSON; the file must be {_SHAPES}")
    try:
        if isinstance(data, list):
            tests, rules = TypeAdapter(list[Test]).validate_python(data), []
        elif isinstance(data, dict) and "tests" in data:
            document = TestsFile.model_validate(data)
            tests, rules = document.tests, document.rules
        else:
            raise BadInputError(f"not a tests file: expected {_SHAPES}", file=path)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise BadInputError(
            f"not a valid tests file: {where + ': ' if where else ''}{first['msg']}",
            file=path,
            hint="write it again with --filter-tests N, or fix that field",
        ) from err
    _check_links(path, tests, rules, isinstance(data, dict))
    return tests, rules


def _check_links(path: Path, tests: list[Test], rules: list[Rule], with_rules: bool) -> None:
    seen: set[str] = set()
    for test in tests:
        if test.id in seen:
            raise BadInputError(f"test id {test.id} appears twice", file=path)
        seen.add(test.id)
    if not with_rules:
        return  # a plain tests.json carries no rules; the run supplies them
    known = {r.id for r in rules}
    for test in tests:
        if test.rule_id and test.rule_id not in known:
            raise BadInputError(
                f"test {test.id} targets rule {test.rule_id}, which is not in 'rules'",
                file=path,
                hint="add the rule to 'rules' or write the file again with --filter-tests N",
            )
