"""Start-up figures: `promptgen --version`, `promptgen inspect`, and the time from
launching `promptgen FILE --effort min --models M --api-base URL` to its first request
reaching the server (a fake server in this process, which notes each arrival).

    python bench/startup.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.fakellm import FakeLLM
from tests.pipeline_fake import PipelineResponder

SAMPLE = REPO / "samples" / "classify-sentiment.prompty"


class _Stamped(FakeLLM):
    """The fake server, noting when each request arrives (time.perf_counter)."""

    def __init__(self) -> None:
        super().__init__(responder=PipelineResponder())
        self.arrivals: list[float] = []

    def _next(self, body: dict[str, Any]) -> Any:
        self.arrivals.append(time.perf_counter())
        return super()._next(body)


def _env() -> dict[str, str]:
    """As a user's shell has it: bytecode is cached (an installed package ships it; a
    checkout writes it on the first launch, which `report` makes before timing)."""
    env = {**os.environ, "OPENAI_API_KEY": "sk-bench-not-a-key", "PYTHONPATH": str(REPO)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def command_seconds(args: list[str], repeat: int) -> float:
    """Median wall time of `python -m promptgen ARGS` (process launch to exit)."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "promptgen", *args], capture_output=True, env=_env()
        )
        times.append(time.perf_counter() - started)
        assert done.returncode == 0, done.stderr.decode()[-2000:]
    return statistics.median(times)


def first_call_seconds(repeat: int, prompt: Path = SAMPLE) -> float:
    """Median time from launching a run to its first request arriving at the server."""
    times = []
    for _ in range(repeat):
        server = _Stamped().start()
        try:
            with tempfile.TemporaryDirectory() as tmp:
                args = [str(prompt), "--effort", "min", "--models", "openai/m", "--no-cache"]
                args += ["--api-base", server.url, "--out", str(Path(tmp) / "out"), "--quiet"]
                launched = time.perf_counter()
                done = subprocess.run(
                    [sys.executable, "-m", "promptgen", *args],
                    capture_output=True,
                    env=_env(),
                    cwd=tmp,
                )
                assert done.returncode == 0, done.stderr.decode()[-2000:]
                times.append(min(server.arrivals) - launched)
        finally:
            server.stop()
    return statistics.median(times)


def report(repeat: int) -> dict[str, float]:
    first_call_seconds(1)  # writes the bytecode caches a fresh checkout lacks
    figures = {
        "version": command_seconds(["--version"], repeat),
        "inspect": command_seconds(["inspect", str(SAMPLE)], repeat),
        "first_call": first_call_seconds(repeat),
    }
    print(f"start-up, median of {repeat} launches (python -m promptgen, this machine):")
    print(f"  promptgen --version                          {figures['version']:.3f} s")
    print(f"  promptgen inspect {SAMPLE.name:<27}{figures['inspect']:.3f} s")
    print(f"  launch -> first request at the server        {figures['first_call']:.3f} s")
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    report(parser.parse_args().repeat)


if __name__ == "__main__":
    main()
