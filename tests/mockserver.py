"""The independent mock server, ../shared/tools/mockllm.py, started for a test: it
answers every structured request with JSON valid against the schema it receives
(`--literal 1`: nothing more), and injects faults on request. Tests using it skip
when ../shared is absent."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from tests.conftest import REPO

MOCK = REPO.parent / "shared" / "tools" / "mockllm.py"
# The mock serves several models (GET /v1/models), so a run against it names the model of
# every role it calls: the id those roles were sent before promptgen asked for the list.
ROLE_MODEL = "openai/default"


@contextmanager
def mockllm(*args: str) -> Iterator[str]:
    """Run the mock server with `args`; yields its OpenAI base URL (…/v1)."""
    if not MOCK.is_file():
        pytest.skip(f"independent mock server not found at {MOCK}")
    proc = subprocess.Popen([sys.executable, str(MOCK), *args], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        port = proc.stdout.readline().split()[-1]
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
