"""`promptgen export` and `--export`: the command line, its errors, and no model calls."""

from __future__ import annotations

import json
from pathlib import Path

from promptgen.export import TARGETS
from tests.cli.test_pipeline import promptgen
from tests.export.conftest import SavedRun


def test_list_names_every_target_on_one_line(tmp_path: Path) -> None:
    result = promptgen(tmp_path, "export", "--list")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert [line.split()[0] for line in lines] == list(TARGETS)
    expected = ["openai-evals", "azure-evals", "github-models", "promptfoo", "inspect", "lve"]
    assert set(expected) <= set(TARGETS)


def test_export_command_writes_each_target_and_calls_no_model(
    sentiment_run: SavedRun, tmp_path: Path
) -> None:
    calls = len(sentiment_run.server.requests)
    out = tmp_path / "exports"
    result = promptgen(
        tmp_path, "export", str(sentiment_run.path), "--to", "jsonl,csv", "--to", "jsonl",
        "--out", str(out),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert len(sentiment_run.server.requests) == calls  # exporting asks no model
    assert (out / "jsonl" / "tests.jsonl").is_file() and (out / "csv" / "tests.csv").is_file()
    assert result.stdout.splitlines()[0] == "jsonl: 1 file(s)"
    assert sorted(p.name for p in out.iterdir()) == ["csv", "jsonl"]  # jsonl once


def test_export_defaults_to_exports_beside_the_context(
    sentiment_run: SavedRun, tmp_path: Path
) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "context.json").write_bytes(sentiment_run.path.read_bytes())
    result = promptgen(tmp_path, "export", str(folder), "--to", "jsonl")
    assert result.returncode == 0, result.stderr
    rows = (folder / "exports" / "jsonl" / "tests.jsonl").read_text().splitlines()
    assert len(rows) == len([t for t in sentiment_run.ctx.tests if t.valid is not False])


def test_bad_export_input_is_one_line_and_exit_2(sentiment_run: SavedRun, tmp_path: Path) -> None:
    cases = [
        (("export", str(sentiment_run.path), "--to", "mlflow"), "unknown export target 'mlflow'"),
        (("export", str(sentiment_run.path)), "no export target given"),
        (("export", str(tmp_path / "missing.json"), "--to", "csv"), "no such file"),
        (("export", "--to", "csv"), "which run?"),
        ((str(sentiment_run.path), "--export", "jsonl,nope"), "unknown export target 'nope'"),
    ]
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    cases.append((("export", str(bad), "--to", "csv"), str(bad)))
    for args, message in cases:
        result = promptgen(tmp_path, *args)
        assert result.returncode == 2, (args, result.stderr)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and message in lines[0], (args, result.stderr)
        assert "Traceback" not in result.stderr


def test_export_option_on_the_main_command(sentiment_run: SavedRun, tmp_path: Path) -> None:
    """`--export` after a resumed (already finished) run: the exports land in OUT/exports."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "context.json").write_bytes(sentiment_run.path.read_bytes())
    result = promptgen(
        tmp_path, str(out / "context.json"), "--out", str(out), "--quiet",
        "--api-base", sentiment_run.server.url, "--export", "jsonl", "--export", "csv",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    rows = [
        json.loads(x) for x in (out / "exports" / "jsonl" / "tests.jsonl").read_text().splitlines()
    ]
    assert {r["id"] for r in rows} <= {t.id for t in sentiment_run.ctx.tests}
    assert all(len(r["runs"]) == 2 for r in rows)
    assert (out / "exports" / "csv" / "tests.csv").is_file()
    assert "jsonl: 1 file(s)" in result.stdout


def test_export_after_generation_only(tmp_path: Path, sentiment_run: SavedRun) -> None:
    """With no models, the tests are exported once generated."""
    out = tmp_path / "gen"
    result = promptgen(
        tmp_path, "samples/summarize.prompt.yml", "--effort", "min", "--out", str(out),
        "--quiet", "--api-base", sentiment_run.server.url, "--export", "jsonl",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    rows = (out / "exports" / "jsonl" / "tests.jsonl").read_text().splitlines()
    assert len(rows) >= 2 and all(json.loads(r)["runs"] == [] for r in rows)
