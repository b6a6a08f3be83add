"""Versions as a history, in a subprocess: `promptgen history OUT`, `promptgen diff
OUT@v1 OUT@v2`, and `--fail-on-regression` on the main command against the previous
version (tests/edit_runs.py: m1 fell 87.5 -> 75.0 since the previous version)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from promptgen.history import finished_at
from tests.conftest import run_cli
from tests.diff_runs import CHECK
from tests.edit_runs import Edited, edited_run

DATE = "%Y-%m-%d %H:%M"


@pytest.fixture(scope="module")
def edited(tmp_path_factory: pytest.TempPathFactory) -> Edited:
    return edited_run(tmp_path_factory.mktemp("history"))


def rows(stdout: str) -> list[list[str]]:
    return [line.split() for line in stdout.splitlines()]


def test_history_lists_the_versions_oldest_first(edited: Edited) -> None:
    wide = {**os.environ, "COLUMNS": "200"}  # the "changed" column on one line
    result = run_cli("history", str(edited.folder), env=wide)
    assert result.returncode == 0, result.stderr
    then_at, now_at = finished_at(edited.then), finished_at(edited.now)
    assert then_at is not None and now_at is not None
    table = rows(result.stdout)
    header = table.index(["version", "date", "(UTC)", "tests", "m1", "m2", "changed"])
    assert table[header + 2 : header + 4] == [
        [edited.previous, *then_at.strftime(DATE).split(), "8", "87.5%", "87.5%", "-"],
        [
            edited.version, "(current)", *now_at.strftime(DATE).split(), "8", "75.0%",
            "100.0%", "since", f"{edited.previous}:", "messages:", "1", "instruction",
            "deleted",
        ],
    ]  # fmt: skip
    assert result.stdout.splitlines()[-1] == (
        f"compare two: promptgen diff {edited.folder}@{edited.previous} {edited.folder}@current"
    )


def test_history_as_json(edited: Edited) -> None:
    result = run_cli("history", str(edited.folder), "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert [(v["version"], v["current"], v["tests"], v["runs"]) for v in data] == [
        (edited.previous, False, 8, 32),
        (edited.version, True, 8, 32),
    ]
    assert [v["compliance"] for v in data] == [
        {"m1": 87.5, "m2": 87.5},
        {"m1": 75.0, "m2": 100.0},
    ]
    assert [v["previous"] for v in data] == [None, edited.previous]
    assert data[1]["changed"] == "messages: 1 instruction deleted"
    assert data[0]["path"] == str(edited.folder / "history" / edited.previous / "context.json")


def test_history_of_a_folder_without_runs(tmp_path: Path) -> None:
    result = run_cli("history", str(tmp_path))
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"promptgen: error: {tmp_path}: no run here (no context.json, nothing in history/) "
        "(give the output folder of a run, e.g. promptgen-out/<prompt>)"
    ]
    missing = tmp_path / "nowhere"
    result = run_cli("history", str(missing))
    assert result.returncode == 2
    assert result.stderr.startswith(f"promptgen: error: {missing}: no such folder (")


def test_diff_two_versions_of_one_folder(edited: Edited, tmp_path: Path) -> None:
    out = edited.folder
    (out / "diff.md").unlink(missing_ok=True)
    result = run_cli("diff", f"{out}@{edited.previous[:6]}", f"{out}@current")
    assert result.returncode == 0, result.stderr
    table = rows(result.stdout)
    assert ["m1", "compliance", "87.5", "75.0", "-12.5"] in table
    assert ["m2", "compliance", "87.5", "100.0", "+12.5"] in table
    assert (
        "tests: 1 added, 1 removed, 1 changed; runs in both: 28, pass → fail: 2, fail → pass: 2"
        in result.stdout
    )
    kept = out / "history" / edited.previous / "context.json"
    assert f"A (then): {kept}: prompt classify-sentiment" in result.stdout
    assert result.stderr.splitlines()[-1] == f"promptgen: wrote {out / 'diff.md'}"
    # the plain folder is the current run; the other way round, m2 fell
    result = run_cli(
        "diff", str(out), f"{out}@{edited.previous}", "--fail-on-regression", "10",
        "--out", str(tmp_path),
    )  # fmt: skip
    assert result.returncode == 1
    assert result.stderr.splitlines()[-1] == (
        "promptgen: error: regressed by more than 10 points: "
        f"m2 compliance 100.0 -> 87.5 (-12.5); m2 {CHECK} 100.0 -> 87.5 (-12.5)"
    )


def test_diff_an_unknown_version_lists_the_versions(edited: Edited) -> None:
    out = edited.folder
    result = run_cli("diff", f"{out}@zzz", str(out))
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"promptgen: error: A: {out}: no version 'zzz' (versions: {edited.previous}, "
        f"{edited.version} (current)) (run `promptgen history {out}` to list them)"
    ]


def test_fail_on_regression_without_a_previous_version(edited: Edited) -> None:
    sample = edited.folder.parent / "prompt" / "classify-sentiment.prompty"
    then = edited.folder.parent / "then"
    result = run_cli(str(sample), "--out", str(then), "--fail-on-regression", "5")
    assert result.returncode == 0, result.stderr
    assert (
        "promptgen: note: --fail-on-regression 5: no previous version of this prompt in the "
        "output folder; not gated"
    ) in result.stderr.splitlines()
