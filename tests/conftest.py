from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests import corpus

REPO = Path(__file__).resolve().parents[1]

needs_corpus = pytest.mark.skipif(
    not corpus.available(), reason=f"shared corpus not found at {corpus.CORPUS}"
)


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run the real `python -m promptgen` in a subprocess."""
    return subprocess.run(
        [sys.executable, "-m", "promptgen", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=120,
    )


@pytest.fixture
def write(tmp_path: Path) -> Callable[[str, str | bytes], Path]:
    """Write a file under tmp_path and return its path."""

    def _write(name: str, content: str | bytes) -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
        return path

    return _write


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if corpus.available():
        terminalreporter.section("conformance")
        for line in corpus.figures().lines():
            terminalreporter.write_line(line)
