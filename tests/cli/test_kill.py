"""The kill suite: SIGKILL at random points (seeded) of generation and of evaluation,
then the same command again; the result is identical to an uninterrupted run's."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from promptgen import load_context
from tests.cli.test_resume import _env
from tests.conftest import REPO
from tests.fakellm import FakeLLM
from tests.pipeline_fake import PipelineResponder

SEED = 20261123


def _command(url: str, out: Path) -> list[str]:
    return [
        sys.executable, "-m", "promptgen", "samples/classify-sentiment.prompty", "--effort", "low",
        "--models", "m1;m2", "--api-base", url, "--concurrency", "4", "--out", str(out), "-q",
    ]  # fmt: skip


def _responder() -> PipelineResponder:
    responder = PipelineResponder()
    responder.by_content = True  # the same request gets the same answer in every run
    responder.bad_every = 3
    return responder


def _result(out: Path) -> dict[str, Any]:
    """What a user reads of a run: rules, tests in their stored order, every cell's
    output and verdict."""
    ctx = load_context(out / "context.json")
    return {
        "rules": [(r.id, r.text) for r in ctx.all_rules],
        "tests": [(t.id, t.valid, t.expected_output) for t in ctx.tests],
        "runs": sorted(
            (r.test_id, r.model, r.run_index, r.output, r.metrics["compliance"].outcome)
            for r in ctx.test_runs
        ),
        "stages": {name: record.status for name, record in ctx.stages.items()},
    }


def _run(url: str, out: Path, tmp: Path, kill_after: int | None, fake: FakeLLM) -> None:
    proc = subprocess.Popen(
        _command(url, out), cwd=REPO, env=_env(tmp), text=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    if kill_after is not None:
        start = len(fake.requests)
        while proc.poll() is None and len(fake.requests) - start < kill_after:
            time.sleep(0.005)
        assert proc.poll() is None, "the run finished before the kill point"
        proc.send_signal(signal.SIGKILL)
    _, err = proc.communicate(timeout=300)
    if kill_after is None:
        assert proc.returncode == 0, err


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], int, int]:
    """An uninterrupted run: its result, its calls in generation and in all."""
    tmp = tmp_path_factory.mktemp("reference")
    with FakeLLM(latency=0.01, responder=_responder()) as fake:
        _run(fake.url, tmp / "out", tmp, None, fake)
        kinds = [b.get("response_format") is None for b in fake.requests]
    return _result(tmp / "out"), kinds.index(True), len(kinds)


@pytest.mark.parametrize("phase", ["generation", "generation", "evaluation", "evaluation"])
def test_killed_anywhere_then_resumed_is_identical(
    phase: str, reference: tuple[dict[str, Any], int, int], tmp_path: Path, request: Any
) -> None:
    expected, generation_calls, total = reference
    rng = random.Random(f"{SEED}-{request.node.callspec.id}")
    low, high = (
        (2, generation_calls - 1) if phase == "generation" else (generation_calls, total - 4)
    )
    kill_after = rng.randint(low, high)
    with FakeLLM(latency=0.01, responder=_responder()) as fake:
        _run(fake.url, tmp_path / "out", tmp_path, kill_after, fake)
        _run(fake.url, tmp_path / "out", tmp_path, None, fake)
    assert _result(tmp_path / "out") == expected, f"killed after call {kill_after}"
