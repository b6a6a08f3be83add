from __future__ import annotations

import asyncio
import ipaddress
import os
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from promptgen.llm import LLM, RetryPolicy, load_settings
from tests import corpus
from tests.fakellm import FakeLLM

REPO = Path(__file__).resolve().parents[1]
# One event loop for all gateway tests, so HTTP sessions are closed in the loop that
# opened them (an aiohttp session cannot be closed from another loop).
LOOP = asyncio.Runner()
OPEN_GATEWAYS: list[LLM] = []


def run(coro):  # type: ignore[no-untyped-def]
    return LOOP.run(coro)


@pytest.fixture(autouse=True)
def _close_gateways() -> Iterator[None]:
    yield
    while OPEN_GATEWAYS:
        LOOP.run(OPEN_GATEWAYS.pop().aclose())


@pytest.fixture(autouse=True)
def _one_embedded_model_at_a_time(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[None]:
    """Tests of the real embedded model (marker `local`) run one at a time over the
    xdist workers: llama.cpp's threads each take a core and wait for each other, so two
    models computing at once on 2 cores took 146 s for a test that takes 12 s alone."""
    if request.node.get_closest_marker("local") is None:
        yield
        return
    import fcntl

    # the session's base directory: its parent is shared by the xdist workers
    lock = tmp_path_factory.getbasetemp().parent / "embedded-model.lock"
    with lock.open("w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(held, fcntl.LOCK_UN)


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


def isolated_env(cwd: Path) -> dict[str, str]:
    """A promptgen subprocess's environment: no provider keys or PROMPTGEN_ settings from
    outside, its own cache under `cwd`, and this checkout first on the path."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PROMPTGEN_", "OPENAI_"))}
    return {**env, "PROMPTGEN_CACHE_DIR": str(cwd / "cache"), "PYTHONPATH": str(REPO)}


def promptgen_in(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`python -m promptgen ARGS` run in `cwd` with `isolated_env(cwd)`."""
    return subprocess.run(
        [sys.executable, "-m", "promptgen", *args],
        capture_output=True, text=True, cwd=cwd, env=isolated_env(cwd), timeout=300,
    )  # fmt: skip


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


def _loopback_only(connect: Callable[..., Any]) -> Callable[..., Any]:
    """`socket.connect` for the test process: an internet address other than loopback
    is refused, so a test that would reach the network fails here and says where."""

    def guarded(sock: socket.socket, address: Any) -> Any:
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            host = str(address[0])
            try:
                loopback = ipaddress.ip_address(host.split("%")[0]).is_loopback
            except ValueError:
                loopback = host == "localhost"
            if not loopback:
                raise ConnectionRefusedError(f"tests reach no network but 127.0.0.1: {host}")
        return connect(sock, address)

    return guarded


socket.socket.connect = _loopback_only(socket.socket.connect)  # type: ignore[method-assign]
socket.socket.connect_ex = _loopback_only(socket.socket.connect_ex)  # type: ignore[method-assign]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The embedded-model tests first: they are the longest file, and under
    `pytest -n auto --dist loadfile` the worker that takes them first leaves the rest
    to the others instead of finishing alone at the end."""
    items.sort(key=lambda item: item.get_closest_marker("local") is None)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if corpus.available():
        terminalreporter.section("conformance")
        for line in corpus.figures().lines():
            terminalreporter.write_line(line)


@pytest.fixture
def fake_llm() -> Iterator[FakeLLM]:
    """A running OpenAI-compatible server on 127.0.0.1."""
    with FakeLLM() as server:
        yield server


@pytest.fixture(params=["openai-compatible", "litellm"])
def gateway(
    request: pytest.FixtureRequest,
    fake_llm: FakeLLM,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[LLM]:
    """A gateway pointed at the fake server, with a fresh cache and fast retries.

    Runs twice: through `--api-base` (the openai SDK) and through litellm's provider
    routing (litellm reads OPENAI_API_BASE for `openai/...` models).
    """
    cli = {"rules": "openai/gpt-4o-mini", "cache_dir": str(tmp_path / "cache")}
    if request.param == "openai-compatible":
        cli["api_base"] = fake_llm.url
    else:
        monkeypatch.setenv("OPENAI_API_BASE", fake_llm.url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    settings = load_settings(cli, env={}, cwd=tmp_path)
    llm = LLM(settings, retry=RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=0.05))
    OPEN_GATEWAYS.append(llm)
    yield llm
