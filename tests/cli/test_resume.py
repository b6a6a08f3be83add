"""Kill a run with SIGKILL in the middle of a stage; the same command finishes it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from promptgen import load_context
from tests.cli.test_pipeline import check_context
from tests.conftest import REPO
from tests.fakellm import FakeLLM
from tests.pipeline_fake import PipelineResponder

CONCURRENCY = 2


def _command(url: str, out: Path) -> list[str]:
    return [
        sys.executable, "-m", "promptgen", "samples/translate-support-reply.prompty",
        "--effort", "high", "--api-base", url, "--concurrency", str(CONCURRENCY),
        "--out", str(out), "--quiet",
    ]  # fmt: skip


def _env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PROMPTGEN_", "OPENAI_"))}
    return {**env, "PROMPTGEN_CACHE_DIR": str(tmp / "cache")}


def _wait_mid_stage(context: Path, stage: str, proc: subprocess.Popen[str]) -> dict:  # type: ignore[type-arg]
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        try:
            data = json.loads(context.read_text())
        except (OSError, ValueError):
            time.sleep(0.05)
            continue
        record = data["stages"].get(stage, {})
        if len(record.get("done", [])) >= 3 and record.get("status") == "running":
            return data
        time.sleep(0.05)
    raise AssertionError(f"never saw stage {stage} in progress")


def _request_key(body: dict) -> str:  # type: ignore[type-arg]
    return json.dumps([body.get("messages"), body.get("response_format")], sort_keys=True)


def test_sigkill_mid_stage_then_resume(tmp_path: Path) -> None:
    out = tmp_path / "out"
    responder = PipelineResponder()
    with FakeLLM(latency=0.05, responder=responder) as fake:
        proc = subprocess.Popen(
            _command(fake.url, out), cwd=REPO, env=_env(tmp_path), text=True,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )  # fmt: skip
        seen = _wait_mid_stage(out / "context.json", "expand", proc)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert proc.returncode == -signal.SIGKILL
        killed_at = len(fake.requests)
        done_before = set(seen["stages"]["expand"]["done"])

        again = subprocess.run(
            _command(fake.url, out), cwd=REPO, env=_env(tmp_path), text=True,
            capture_output=True, timeout=300,
        )  # fmt: skip
        assert again.returncode == 0, again.stderr
        bodies = [_request_key(b) for b in fake.requests]

    check_context(out)
    ctx = load_context(out / "context.json")
    # Nothing lost, nothing doubled: the shape of a complete run at effort high.
    assert (len(ctx.rules), len(ctx.inverse_rules)) == (4, 4)
    counts = Counter(t.origin for t in ctx.tests)
    assert counts == {"generated": 144, "expanded": 144, "sample": 1}  # the blender sample
    assert done_before <= set(ctx.stages["expand"].done)
    # Finished calls were not made again: only calls in flight at the kill repeat.
    repeated = sum(n - 1 for n in Counter(bodies).values() if n > 1)
    assert repeated <= CONCURRENCY
    assert len(bodies) > killed_at  # the resumed run did the rest
    # And the resume skipped finished work instead of replaying it from the cache: only
    # answers finished after the last save (at most every 0.5 s) come back as cache hits.
    print("cache hits on resume:", ctx.usage.total.cache_hits)
    assert ctx.usage.total.cache_hits <= 40
