"""Ctrl-C (SIGINT) mid-run: one line, exit 130, the running stages saved as
`interrupted`; resuming from the saved context keeps its server and models (and says
so) instead of falling back to the defaults."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from promptgen import load_context
from tests.conftest import REPO
from tests.fakellm import FakeLLM
from tests.pipeline_fake import PipelineResponder

SAMPLE = str(REPO / "samples" / "classify-sentiment.prompty")


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PROMPTGEN_", "OPENAI_"))}
    return {**env, "PROMPTGEN_CACHE_DIR": str(tmp_path / "cache"), "PYTHONFAULTHANDLER": "1"}


def _sigint_as_at_a_terminal() -> None:
    """A command started in the background of a non-interactive shell (`cmd &` in a
    script, as CI harnesses do) inherits SIGINT *ignored*, and Python then installs no
    KeyboardInterrupt handler: the child would never see the Ctrl-C this test sends."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _promptgen(*args: str) -> list[str]:
    return [sys.executable, "-m", "promptgen", *args]


def test_ctrl_c_is_one_line_and_the_run_resumes_on_the_same_server(tmp_path: Path) -> None:
    out = tmp_path / "out"
    # Calls that never answer in time: only the interrupt can end the run early.
    with FakeLLM(latency=120.0, responder=PipelineResponder()) as fake:
        first = subprocess.Popen(
            _promptgen(SAMPLE, "--effort", "min", "--api-base", fake.url, "--models", "m1",
                       "--out", str(out)),
            cwd=REPO, env=_env(tmp_path), text=True, preexec_fn=_sigint_as_at_a_terminal,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        deadline = time.monotonic() + 60
        while not fake.requests and first.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert fake.requests, "no call was made"
        first.send_signal(signal.SIGINT)
        try:
            stdout, stderr = first.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            # Still running a minute after Ctrl-C: make it say where it is stuck
            # (PYTHONFAULTHANDLER dumps every thread's stack on SIGABRT).
            first.send_signal(signal.SIGABRT)
            _, stuck = first.communicate(timeout=30)
            raise AssertionError(f"no exit 60 s after SIGINT; stacks:\n{stuck[-6000:]}") from None
        fake.latency = 0.0
        assert first.returncode == 130, stderr
        assert "Traceback" not in stderr and stdout == ""
        lines = stderr.strip().splitlines()
        assert lines[-1] == "promptgen: interrupted"
        running = [line for line in lines if ": interrupted, " in line]
        assert running  # the console shows the stages that were running as interrupted
        saved = json.loads((out / "context.json").read_text())
        statuses = {name: record["status"] for name, record in saved["stages"].items()}
        assert "interrupted" in statuses.values() and "failed" not in statuses.values()
        assert {line.split(":")[1].strip() for line in running} == {
            n for n, s in statuses.items() if s == "interrupted"
        }

        calls_before = len(fake.requests)
        again = subprocess.run(
            _promptgen(str(out / "context.json"), "-q"), cwd=REPO, env=_env(tmp_path),
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert again.returncode == 0, again.stderr
        assert (
            f"promptgen: resuming with --api-base {fake.url} and --models m1 from the saved run"
            in again.stderr.splitlines()
        )
        assert len(fake.requests) > calls_before  # the resumed run called the saved server
    ctx = load_context(out / "context.json")
    assert all(record.status == "done" for record in ctx.stages.values())
    assert ctx.models_run == ["m1"] and ctx.options.models.api_base == fake.url
