"""`promptgen diff A B` in a subprocess: tables, diff.md, the regression gate, bad input."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.diff_runs import CHECK, two_runs


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return two_runs(tmp_path_factory.mktemp("runs"))


def rows(stdout: str) -> list[list[str]]:
    """The table rows as words, whatever the column widths."""
    return [line.split() for line in stdout.splitlines()]


def test_tables_on_stdout_and_diff_md_beside_b(folders: tuple[Path, Path]) -> None:
    then, now = folders
    (now / "diff.md").unlink(missing_ok=True)
    result = run_cli("diff", str(then), str(now))
    assert result.returncode == 0, result.stderr
    table = rows(result.stdout)
    assert ["m1", "compliance", "87.5", "75.0", "-12.5"] in table
    assert ["m2", "compliance", "87.5", "100.0", "+12.5"] in table
    assert ["m1", CHECK, "87.5", "75.0", "-12.5"] in table
    assert ["m1", "classify-sentiment-compliance", "75.0", "75.0", "+0.0"] in table
    assert (
        "tests: 1 added, 1 removed, 1 changed; runs in both: 28, pass → fail: 2, fail → pass: 2"
        in result.stdout
    )
    assert result.stderr.strip() == f"promptgen: wrote {now / 'diff.md'}"
    page = (now / "diff.md").read_text(encoding="utf-8")
    assert "| m1 | compliance | 87.5 | 75.0 | -12.5 |" in page
    assert "| m2 | not-icontains=violation | 87.5 | 100.0 | +12.5 |" in page
    assert f"- A (then): {then / 'context.json'}: prompt classify-sentiment" in page


@pytest.mark.parametrize(("threshold", "code"), [("12.4", 1), ("12.5", 0), ("12.6", 0)])
def test_fail_on_regression_just_below_and_above_the_drop(
    folders: tuple[Path, Path], tmp_path: Path, threshold: str, code: int
) -> None:
    then, now = folders
    out = tmp_path / "report" / "d.md"
    result = run_cli(
        "diff", str(then / "context.json"), str(now / "context.json"),
        "--fail-on-regression", threshold, "--out", str(out),
    )  # fmt: skip
    assert result.returncode == code, result.stderr
    assert out.is_file() and "| m1 | compliance | 87.5 | 75.0 | -12.5 |" in out.read_text()
    lines = result.stderr.splitlines()
    assert lines[0] == f"promptgen: wrote {out}"
    if code:
        assert lines[1:] == [
            f"promptgen: error: regressed by more than {threshold} points: "
            f"m1 compliance 87.5 -> 75.0 (-12.5); m1 {CHECK} 87.5 -> 75.0 (-12.5)"
        ]
    else:
        assert len(lines) == 1


def test_the_other_way_round_m2_regressed(folders: tuple[Path, Path], tmp_path: Path) -> None:
    then, now = folders
    result = run_cli(
        "diff", str(now), str(then), "--fail-on-regression", "10", "--out", str(tmp_path)
    )  # fmt: skip
    assert result.returncode == 1
    assert result.stderr.splitlines()[-1] == (
        "promptgen: error: regressed by more than 10 points: "
        f"m2 compliance 100.0 -> 87.5 (-12.5); m2 {CHECK} 100.0 -> 87.5 (-12.5)"
    )
    assert (tmp_path / "diff.md").is_file()  # --out a folder: diff.md inside it


def test_a_run_against_itself(folders: tuple[Path, Path], tmp_path: Path) -> None:
    then, _ = folders
    copy = tmp_path / "copy"
    shutil.copytree(then, copy)
    result = run_cli("diff", str(then), str(copy / "context.json"), "--fail-on-regression", "0")
    assert result.returncode == 0, result.stderr
    assert "no change: every figure, test and verdict is the same" in result.stdout
    assert ["m1", "compliance", "87.5", "87.5", "+0.0"] in rows(result.stdout)
    assert "Runs that went from pass to fail: none" in result.stdout
    assert (copy / "diff.md").is_file()  # B is a file: diff.md beside it


def test_bad_input_is_one_line_and_exit_2(folders: tuple[Path, Path], tmp_path: Path) -> None:
    then, _ = folders
    not_context = tmp_path / "tests.json"
    not_context.write_text('{"tests": []}', encoding="utf-8")
    empty = tmp_path / "empty"
    empty.mkdir()
    cases = {
        str(tmp_path / "missing.json"): "B: " + str(tmp_path / "missing.json") + ": no such file",
        str(not_context): "not a valid promptgen context",
        str(empty): f"B: {empty / 'context.json'}: no context.json in this folder",
    }
    for path, message in cases.items():
        result = run_cli("diff", str(then), path)
        assert result.returncode == 2, (path, result.stderr)
        assert len(result.stderr.splitlines()) == 1 and message in result.stderr, result.stderr
        assert "Traceback" not in result.stderr and result.stdout == ""
    negative = run_cli("diff", str(then), str(then), "--fail-on-regression", "-1")
    assert negative.returncode == 2 and len(negative.stderr.splitlines()) == 1


MODELS = ("openai/gpt-4o-mini", "openai/gpt-4o")


def test_tables_read_at_80_columns_with_model_names_side_by_side(tmp_path: Path) -> None:
    then, now = two_runs(tmp_path, MODELS)
    result = run_cli("diff", str(then), str(now), env={**os.environ, "COLUMNS": "80"})
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "…" not in result.stdout
    table = rows(result.stdout)
    assert ["openai/gpt-4o-mini", "compliance", "87.5", "75.0", "-12.5"] in table
    assert ["openai/gpt-4o", "compliance", "87.5", "100.0", "+12.5"] in table
    assert ["openai/gpt-4o-mini", CHECK, "87.5", "75.0", "-12.5"] in table
    # the wide tables (rules, flips) keep every model name whole and wrap their texts
    tables = lines[3:]  # after the headline (which names the models in a sentence)
    cells = [w for line in tables for w in line.split()]
    names = [w for w in cells if w in MODELS]
    assert set(names) == set(MODELS) and len(names) >= 10
    assert not [w for w in cells if w.startswith("openai/gpt-4o-") and w not in MODELS]
    assert max(map(len, tables)) <= 80
