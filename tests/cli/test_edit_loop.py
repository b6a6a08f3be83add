"""The whole loop on the command line, with the real continuation: run a prompt, edit
it, run the same command again with --fail-on-regression; the run continues, its
summary and changes.md open with what the edit did, the gate names the test that broke,
and `promptgen history` / `promptgen diff OUT@VERSION` read the two versions.

The scripted fake (tests/diff_runs.py) names each test's rule in its input ("-R2-"), and
the models under test break the rules of (model, label) pairs: then m1 breaks R3 and m2
I1; after the edit m1 also breaks R2 and m2 no longer breaks I1."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from promptgen import load_context
from tests.conftest import REPO
from tests.diff_runs import CHECK, NOW_BAD, SAMPLE, THEN_BAD, Scripted
from tests.fakellm import FakeLLM

ADDED = "If the review is not written in English, answer neutral."


def _promptgen(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PROMPTGEN_", "OPENAI_"))}
    env |= {"PROMPTGEN_CACHE_DIR": str(tmp / "cache"), "PYTHONPATH": str(REPO), "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "promptgen", *args], cwd=tmp, env=env, text=True,
        capture_output=True, timeout=300,
    )  # fmt: skip


def test_edit_run_again_read_what_broke_and_gate(tmp_path: Path) -> None:
    prompt = tmp_path / "classify-sentiment.prompty"
    text = SAMPLE.read_text(encoding="utf-8")
    prompt.write_text(text, encoding="utf-8")
    for metric in SAMPLE.parent.glob("classify-sentiment*.metric.prompty"):
        (tmp_path / metric.name).write_text(metric.read_text(encoding="utf-8"))
    out = tmp_path / "out"

    def run(responder: Scripted, *extra: str) -> subprocess.CompletedProcess[str]:
        with FakeLLM(responder=responder) as fake:
            return _promptgen(
                tmp_path, str(prompt), "--effort", "min", "--api-base", fake.url,
                "--models", "m1;m2", "--runs-per-test", "2", "--check", CHECK,
                "--no-behaviours", "--out", str(out), "--no-cache", *extra,
            )  # fmt: skip

    first = run(Scripted(THEN_BAD), "--fail-on-regression", "5")
    assert first.returncode == 0, first.stderr
    assert (
        "--fail-on-regression 5: no previous version of this prompt in the output folder; not gated"
    ) in first.stderr
    then = load_context(out / "context.json")

    edited = text.replace("do not repeat the review.", f"do not repeat the review.\n{ADDED}")
    assert edited != text
    prompt.write_text(edited, encoding="utf-8")
    second = run(Scripted(NOW_BAD), "--fail-on-regression", "5")
    now = load_context(out / "context.json")
    edit = now.edit
    assert edit is not None and edit.previous == then.prompt_hash[:10]
    assert edit.changed == ["messages"]
    # Every rule and test of the first version is kept; the new instruction's rule and
    # its inverse are added, with their tests.
    assert edit.rules_kept == [r.id for r in then.all_rules]
    assert edit.rules_retired == [] and edit.tests_retired == []
    assert edit.tests_kept == [t.id for t in then.tests]
    added = [r for r in now.all_rules if r.id in edit.rules_added]
    assert len(added) == 2 and sorted(r.inverse for r in added) == [False, True]
    new_tests = [t for t in now.tests if t.id not in edit.tests_kept]
    assert {t.rule_id for t in new_tests} == {r.id for r in added}

    r2 = next(t.id for t in now.tests if "-R2-" in t.inputs["review"])
    assert second.returncode == 1, second.stderr
    assert second.stdout.startswith(
        f"changed since {edit.previous}: messages: 1 instruction added\n"
    )
    regression = next(ln for ln in second.stderr.splitlines() if "regression: m1 compl" in ln)
    assert regression.endswith(f"since version {edit.previous}; pass → fail on m1: {r2}")
    assert f"changed since {edit.previous}: " in second.stdout
    assert f"1 regression (pass → fail): {r2} on m1" in second.stdout

    lines = second.stderr.splitlines()
    assert lines[-1] == (
        f"promptgen: error: --fail-on-regression 5: 2 figures fell by more than 5 points since "
        f"version {edit.previous} (m1 compliance, m1 {CHECK})"
    )
    # m1 fell 7.1 points (88.9 -> 81.8): a gate at 10 lets the edit through; the run
    # resumes with nothing left to do.
    third = run(Scripted(NOW_BAD), "--fail-on-regression", "10")
    assert third.returncode == 0, third.stderr
    assert "regression" not in third.stderr

    changes = (out / "changes.md").read_text(encoding="utf-8")
    assert changes.startswith(f"# What changed: version {edit.previous} → {now.prompt_hash[:10]}")
    assert f"+{ADDED}" in changes  # the prompt diff
    assert f"- **Rules:** +2 added, -0 retired, ~0 reworded, {len(then.all_rules)} kept" in changes
    assert f"### {r2} on m1" in changes
    assert "| m1 | 0 | m1 answers R2 | m1 answers R2 VIOLATION |" in changes
    assert (out / "report.md").read_text(encoding="utf-8").count("What changed") >= 1

    listed = _promptgen(tmp_path, "history", str(out))
    assert listed.returncode == 0, listed.stderr
    rows = [line for line in listed.stdout.splitlines() if line.startswith(edit.previous[:6])]
    assert len(rows) == 1
    current = next(line for line in listed.stdout.splitlines() if "(current)" in line)
    assert current.startswith(now.prompt_hash[:10])
    compared = _promptgen(tmp_path, "diff", f"{out}@{edit.previous[:6]}", f"{out}@current")
    assert compared.returncode == 0, compared.stderr
    assert "pass → fail: 2" in compared.stdout
