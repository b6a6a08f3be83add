"""`jsonl` and `csv`: every exported test, every field, values as the context has them."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from promptgen.export import ExportSettings, write_exports
from promptgen.export.common import exported_tests
from promptgen.export.plain import CSV_COLUMNS
from tests.export.conftest import SavedRun


def test_jsonl_has_one_line_per_test_with_every_field(
    sentiment_run: SavedRun, tmp_path: Path
) -> None:
    ctx = sentiment_run.ctx
    (result,) = write_exports(ctx, ["jsonl"], tmp_path, ExportSettings())
    assert result.paths == [tmp_path / "jsonl" / "tests.jsonl"]
    rows = [json.loads(line) for line in result.paths[0].read_text().splitlines()]
    tests = exported_tests(ctx)
    assert [r["id"] for r in rows] == [t.id for t in tests]
    for row, test in zip(rows, tests, strict=True):
        assert row["inputs"] == test.inputs
        assert row["arguments"]["review"] == test.inputs["review"]
        rule = ctx.rule(test.rule_id)  # none for the prompt's own sample
        assert row["rule"] == (rule.text if rule else None)
        assert (rule is None) == (test.origin == "sample")
        assert row["expected"] == test.groundtruth  # accepted groundtruth (scored 90)
        assert row["groundtruth_status"] == "ok"
        runs = [r for r in ctx.test_runs if r.test_id == test.id]
        assert len(row["runs"]) == len(runs) == 2  # two models, one run each
        for exported, run in zip(row["runs"], runs, strict=True):
            assert exported["model"] == run.model
            assert exported["output"] == run.output
            assert exported["metrics"]["compliance"]["score"] == run.metrics["compliance"].score


def test_csv_flattens_inputs_and_averages_scores_per_model(
    sentiment_run: SavedRun, tmp_path: Path
) -> None:
    ctx = sentiment_run.ctx
    (result,) = write_exports(ctx, ["csv"], tmp_path, ExportSettings())
    with result.paths[0].open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    header = list(rows[0])
    assert header[: len(CSV_COLUMNS)] == list(CSV_COLUMNS)
    assert "input.review" in header
    assert "openai/gpt-4o-mini.compliance" in header
    assert "azure/my-deployment.word-count={max: 40}" in header
    tests = exported_tests(ctx)
    assert len(rows) == len(tests)
    for row, test in zip(rows, tests, strict=True):
        assert row["test_id"] == test.id
        assert row["input.review"] == test.inputs["review"]
        assert row["inverse"] == ("true" if test.inverse else "false")
        assert row["expected"] == test.groundtruth
        for model in ("openai/gpt-4o-mini", "azure/my-deployment"):
            scores = [
                r.metrics["classify-sentiment-compliance"].score
                for r in ctx.test_runs
                if r.test_id == test.id and r.model == model
            ]
            expected = sum(scores) / len(scores)  # type: ignore[arg-type]
            assert row[f"{model}.classify-sentiment-compliance"] == f"{expected:.1f}"
            assert row[f"{model}.compliance"] == "100.0"


def test_invalid_tests_are_left_out_unless_the_run_kept_them(
    sentiment_run: SavedRun, tmp_path: Path
) -> None:
    ctx = sentiment_run.ctx.model_copy(deep=True)
    ctx.tests[0].valid = False
    (result,) = write_exports(ctx, ["jsonl"], tmp_path / "a", ExportSettings())
    ids = [json.loads(line)["id"] for line in result.paths[0].read_text().splitlines()]
    assert ctx.tests[0].id not in ids and len(ids) == len(ctx.tests) - 1
    ctx.options.evaluation.keep_invalid = True
    (result,) = write_exports(ctx, ["jsonl"], tmp_path / "b", ExportSettings())
    assert len(result.paths[0].read_text().splitlines()) == len(ctx.tests)
