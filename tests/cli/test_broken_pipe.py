"""`promptgen ... | head -1`: a reader that goes away ends the output quietly (no
traceback, no "Exception ignored"), and never changes a run's exit code."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.fakellm import FakeLLM
from tests.pipeline_fake import PipelineResponder

SAMPLE = str(REPO / "samples" / "classify-sentiment.prompty")


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PROMPTGEN_", "OPENAI_"))}
    return {**env, "PROMPTGEN_CACHE_DIR": str(tmp_path / "cache"), "COLUMNS": "100"}


def _closed_stdout(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run promptgen with a stdout whose reader has already gone: every write fails."""
    read, write = os.pipe()
    os.close(read)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "promptgen", *args], stdout=write, stderr=subprocess.PIPE,
            text=True, cwd=REPO, env=env, timeout=120,
        )  # fmt: skip
    finally:
        os.close(write)
    return subprocess.CompletedProcess(proc.args, proc.returncode, "", proc.stderr)


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["inspect", SAMPLE], id="inspect-rich"),
        pytest.param(["inspect", SAMPLE, "--json"], id="inspect-json"),
        pytest.param(["schema", "context"], id="schema"),
        pytest.param(["models"], id="models-rich"),
        pytest.param(["--version"], id="version"),
        pytest.param([SAMPLE, "--dry-run"], id="run-dry-run"),
    ],
)
def test_a_closed_pipe_ends_quietly(tmp_path: Path, args: list[str]) -> None:
    if "--dry-run" in args:  # its own output folder: never a saved run's in the clone
        args = [*args, "--out", str(tmp_path / "out")]
    result = _closed_stdout(args, _env(tmp_path))
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""


def test_head_reads_the_first_line(tmp_path: Path) -> None:
    """The shell's own `| head -1`, with output far larger than the pipe's buffer."""
    command = f"{sys.executable} -m promptgen schema context | head -1; echo rc=${{PIPESTATUS[0]}}"
    result = subprocess.run(
        ["bash", "-c", command], capture_output=True, text=True, cwd=REPO,
        env=_env(tmp_path), timeout=120,
    )  # fmt: skip
    assert result.stdout.splitlines() == ["{", "rc=0"]
    assert result.stderr == ""


def test_a_run_whose_reader_left_still_writes_its_files_and_keeps_its_gate(
    tmp_path: Path,
) -> None:
    responder = PipelineResponder()
    responder.bad_every = 2  # half the outputs break a rule: compliance well below 100
    out = tmp_path / "out"
    with FakeLLM(responder=responder) as fake:
        args = [
            SAMPLE, "--effort", "min", "--api-base", fake.url, "--models", "m1", "--out",
            str(out), "-q", "--fail-under", "100", "--junit", str(tmp_path / "junit.xml"),
        ]  # fmt: skip
        result = _closed_stdout(args, _env(tmp_path))
    assert result.returncode == 1, result.stderr  # the gate, not the closed pipe
    using = f"promptgen: using default, the one model {fake.url} serves "
    roles = "(--rules-model and --eval-model to choose another)"
    assert result.stderr.splitlines()[0] == f"{using}{roles}"
    assert result.stderr.splitlines()[1].startswith("promptgen: error: overall compliance")
    assert len(result.stderr.splitlines()) == 2
    assert (out / "report.md").is_file() and (tmp_path / "junit.xml").is_file()
