"""bench/quality.py end to end against the scripted large-model fake: the figures a user
reads, per sample, and the targets line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO


def test_the_quality_table_against_the_scripted_fake(tmp_path: Path) -> None:
    figures = tmp_path / "figures.json"
    done = subprocess.run(
        [
            sys.executable, "bench/quality.py", "--fake", "--samples", "haiku",
            "translate-support-reply", "classify-sentiment", "--out", str(tmp_path / "runs"),
            "--json", str(figures),
        ],
        capture_output=True, text=True, cwd=REPO, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = {row["sample"]: row for row in json.loads(figures.read_text())}
    haiku, translate = rows["haiku"], rows["translate-support-reply"]
    sentiment = rows["classify-sentiment"]
    # haiku: 7 instructions; the fake's 3 rules hold the words of all 7
    assert (haiku["instructions"], haiku["covered"], haiku["recall"]) == (7, 7, 100.0)
    assert (haiku["rules"], haiku["inverse_rules"], haiku["ungrounded"]) == (3, 3, 0)
    assert (haiku["targets"], haiku["with_tests"], haiku["coverage"]) == (6, 6, 100.0)
    # 6 rule slots; the 8 behaviours (2 conditions, 2 temptations, 2 boundary inputs, 2
    # the model found) fill 5 of them and add 3
    assert haiku["tests"] == haiku["valid"] == 9 and haiku["dup_pairs"] == 0
    assert (haiku["behaviours"], haiku["behaviours_tested"]) == (8, 8)
    assert (haiku["placeholders"], haiku["restating"], haiku["dup_inputs"]) == (0, 0, 0)
    # the classifier's four labels, each the expected class of a test
    assert (sentiment["classes"], sentiment["classes_tested"]) == (4, 4)
    assert sentiment["classes_expected"] == 4  # the large-model fake: trusted
    # three scenarios: every rule and inverse rule has a test in each
    assert (translate["targets"], translate["with_tests"]) == (36, 36)
    assert (translate["instructions"], translate["covered"]) == (9, 8)
    line = next(x for x in done.stdout.splitlines() if x.startswith("haiku "))
    assert "7/7 100%" in line and "100%" in line.split("7/7 100%")[1]
    assert "coverage 100%              met" in done.stdout
    assert "no placeholder inputs      met" in done.stdout
    assert "every output class tested  met" in done.stdout
    row = next(x for x in done.stdout.splitlines() if x.startswith("haiku ") and "8/8" in x)
    assert row.split() == ["haiku", "9", "0", "0", "0", "8/8", "0/0", "0"]
    assert "recall >= 80%              met" in done.stdout
