"""Plain data: `tests.jsonl` (one test per line, every field) and `tests.csv` (one test
per row, flattened). Columns are documented in docs/exports.md."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from promptgen.context import Context
from promptgen.csvcells import row as cells
from promptgen.export.common import (
    ExportResult,
    ExportSettings,
    arguments,
    expected_output,
    exported_tests,
    write_text,
)
from promptgen.export.common import write_jsonl as jsonl_file
from promptgen.results import Test
from promptgen.words import counted


def test_record(ctx: Context, test: Test) -> dict[str, Any]:
    """A test with everything known about it: its own fields, the rule it targets, the
    arguments the prompt is rendered with, the reference answer and its runs' results."""
    rule = ctx.rule(test.rule_id)
    runs = [
        {
            "model": run.model,
            "run_index": run.run_index,
            "output": run.output,
            "error": run.error,
            "metrics": {
                name: {"score": m.score, "outcome": m.outcome} for name, m in run.metrics.items()
            },
        }
        for run in ctx.test_runs
        if run.test_id == test.id
    ]
    return {
        **test.model_dump(mode="json"),
        "rule": rule.text if rule else None,
        "arguments": arguments(ctx, test),
        "expected": expected_output(test),
        "reference": test.reference,
        "runs": runs,
    }


def write_jsonl(ctx: Context, out: Path, settings: ExportSettings) -> ExportResult:
    rows = [test_record(ctx, t) for t in exported_tests(ctx)]
    path = jsonl_file(out / "tests.jsonl", rows)
    return ExportResult("jsonl", [path], notes=[counted(len(rows), "test")])


# The fixed columns of tests.csv, in order; then `input.<name>` per input and
# `<model>.<metric>` (average score 0-100 over the runs) per model and metric.
CSV_COLUMNS = (
    "test_id", "rule_id", "rule", "inverse", "scenario", "origin", "generation",
    "parent_id", "valid", "validity_reason", "expected", "expected_output", "reasoning",
    "groundtruth", "groundtruth_model", "groundtruth_score", "groundtruth_status", "reference",
)  # fmt: skip


def write_csv(ctx: Context, out: Path, settings: ExportSettings) -> ExportResult:
    tests = exported_tests(ctx)
    inputs = list(dict.fromkeys(k for t in tests for k in arguments(ctx, t)))
    scored = [(m, metric.name) for m in ctx.models_run for metric in ctx.metrics]
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(
        cells([*CSV_COLUMNS, *(f"input.{n}" for n in inputs), *(f"{m}.{k}" for m, k in scored)])
    )
    for test in tests:
        record = test_record(ctx, test)
        row = [_cell(record["id" if c == "test_id" else c]) for c in CSV_COLUMNS]
        values = record["arguments"]
        row += [values.get(n, "") for n in inputs]
        row += [_average(record["runs"], m, k) for m, k in scored]
        writer.writerow(cells(row))
    path = write_text(out / "tests.csv", buffer.getvalue())
    return ExportResult("csv", [path], notes=[counted(len(tests), "test")])


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _average(runs: list[dict[str, Any]], model: str, metric: str) -> str:
    scores = [
        r["metrics"][metric]["score"]
        for r in runs
        if r["model"] == model
        and metric in r["metrics"]
        and r["metrics"][metric]["score"] is not None
    ]
    return f"{sum(scores) / len(scores):.1f}" if scores else ""
