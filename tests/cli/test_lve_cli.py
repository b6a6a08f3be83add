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


def _two_lves(root: Path) -> tuple[Path, Path]:
    from tests.evaluation.test_lve_replay import REGEX_TEST, lve

    good = {"args": {"word": "cat"}, "response": "No.", "passed": True}
    return lve(root, REGEX_TEST, [good], name="a"), lve(root, REGEX_TEST, [good], name="b")


def test_a_file_gone_when_read_is_skipped_with_a_note(tmp_path: Path) -> None:
    """Issue 28 item 14: a listed instances file that is gone when read (here a dangling
    link) is skipped with a note on stderr and counted in the summary."""
    a, _ = _two_lves(tmp_path)
    gone = a / "instances" / "later.jsonl"
    gone.symlink_to(a / "instances" / "deleted.jsonl")
    result = run_cli("lve", "replay", str(tmp_path / "repository"))
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines() == [
        f"promptgen: note: skipped {gone}: it was gone when read (deleted meanwhile, or a "
        "dangling link)"
    ]
    assert result.stdout.splitlines()[-1] == (
        "replayed 2 of 2 instances: 2 agree, 0 disagree; 1 file(s) skipped (gone when read)"
    )


def test_a_test_file_deleted_after_listing_is_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race itself: the walk lists b's test.json and its instances file, which are
    deleted before they are read (a filesystem helper patched in-process: a subprocess
    cannot time the deletion)."""
    from promptgen.evaluation import lve_replay
    from promptgen.formats import lve_files

    a, b = _two_lves(tmp_path)

    def deleting(real):  # type: ignore[no-untyped-def]
        def read(path: Path, *args, **kwargs):  # type: ignore[no-untyped-def]
            if path.name in ("test.json", "instances.jsonl") and b in path.parents:
                path.unlink()
            return real(path, *args, **kwargs)

        return read

    monkeypatch.setattr(lve_replay, "read_text", deleting(lve_replay.read_text))
    assert run_app(args=["lve", "replay", "--json", str(tmp_path / "repository")]) == 0
    out, err = capsys.readouterr()
    data = json.loads(out)
    assert data["totals"]["lves"] == data["totals"]["agreed"] == 1
    assert data["skipped_files"] == [str(b / "test.json")]
    assert err.splitlines() == [
        f"promptgen: note: skipped {b / 'test.json'}: it was gone when read (deleted "
        "meanwhile, or a dangling link)"
    ]
    monkeypatch.undo()
    (b / "test.json").write_text((a / "test.json").read_text(), encoding="utf-8")
    monkeypatch.setattr(lve_files, "read_limited", deleting(lve_files.read_limited))
    assert run_app(args=["lve", "replay", str(tmp_path / "repository")]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines()[-1] == (
        "replayed 1 of 1 instances: 1 agree, 0 disagree; 1 file(s) skipped (gone when read)"
    )
    assert err == (
        f"promptgen: note: skipped {b / 'instances' / 'instances.jsonl'}: it was gone when "
        "read (deleted meanwhile, or a dangling link)\n"
    )
