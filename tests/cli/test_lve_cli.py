"""`promptgen lve replay`: the corpus' totals and exit 0 (the real CLI in a subprocess);
bad input is one line and exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from promptgen.cli import run_app
from tests import corpus
from tests.conftest import needs_corpus, run_cli

TOTALS = (
    "replayed 159 of 228 instances: 155 agree, 4 disagree; 69 not built in (SMS_SpamChecker "
    "28, ToxicityChecker 19, LlamaGuardSafetyChecker 8, BiasChecker 6, PII_Checker 3, "
    "JSON_PalindromeChecker 2, TranslatedSongCopyrightChecker 2, RepetitionChecker 1)"
)


@needs_corpus
def test_replay_of_the_corpus() -> None:
    result = run_cli("lve", "replay", str(corpus.LVE_REPOSITORY), "-v")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert TOTALS in lines
    disagreements = [line for line in lines if line.startswith("disagree: ")]
    assert len(disagreements) == 4
    assert all("instances.jsonl:" in line for line in disagreements)


@needs_corpus
def test_replay_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    folder = corpus.LVE_REPOSITORY / "dummy" / "math"
    assert run_app(args=["lve", "replay", "--json", str(folder)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["totals"]["instances"] == data["totals"]["agreed"] == 21
    assert data["lves"][0]["lve"] == "dummy/math/a_plus_b/openai--gpt-35-turbo"


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    result = run_cli("lve", "replay", str(tmp_path / "missing"))
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr.splitlines() == [
        f"promptgen: error: {tmp_path / 'missing'}: no such file or folder"
    ]


def test_unreadable_tests_are_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_app(args=["lve", "replay", str(tmp_path)]) == 2
    assert "no test.json under this folder" in capsys.readouterr().err
    (tmp_path / "test.json").write_text('{"description": "d"}', encoding="utf-8")
    assert run_app(args=["lve", "replay", str(tmp_path)]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert "test.json:" in line and "'model' is required" in line
