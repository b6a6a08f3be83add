"""`promptgen models` and `promptgen ask` through the real CLI and a real HTTP server."""

from __future__ import annotations

import importlib.metadata
import json
import os
from pathlib import Path

import pytest

from promptgen.cli import run_app
from tests.conftest import REPO, run_cli
from tests.fakellm import FakeLLM, Reply, json_reply


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PROMPTGEN_", "OPENAI_"))}
    return {**env, "PROMPTGEN_CACHE_DIR": str(tmp_path / "cache"), **extra}


def test_ask_with_api_base(fake_llm: FakeLLM, tmp_path: Path) -> None:
    fake_llm.queue(Reply("hi there", prompt_tokens=12, completion_tokens=2))
    result = run_cli(
        "ask", "Say hi", "--api-base", fake_llm.url, "-m", "openai/fake", env=_env(tmp_path)
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "hi there\n"
    assert "12+2 tokens" in result.stderr
    assert fake_llm.requests[0]["messages"] == [{"role": "user", "content": "Say hi"}]


def test_ask_json_schema(fake_llm: FakeLLM, tmp_path: Path) -> None:
    schema = tmp_path / "s.json"
    schema.write_text(
        json.dumps(
            {
                "type": "object",
                "properties": {"greeting": {"type": "string"}},
                "required": ["greeting"],
            }
        )
    )
    fake_llm.queue(json_reply({"nope": 1}), json_reply({"greeting": "hello"}))
    result = run_cli(
        "ask", "Greet", "--json-schema", str(schema), "--api-base", fake_llm.url,
        env=_env(tmp_path),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"greeting": "hello"}
    assert len(fake_llm.requests) == 2  # one repair turn


def test_ask_reads_dotenv(fake_llm: FakeLLM, tmp_path: Path) -> None:
    (tmp_path / ".env").write_text(
        f"OPENAI_API_KEY=sk-from-dotenv\nOPENAI_API_BASE={fake_llm.url}\n"
    )
    fake_llm.queue("from litellm")
    result = run_cli_in(tmp_path, "ask", "x", "-m", "openai/fake", env=_env(tmp_path))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "from litellm"


def test_ask_provider_error_is_one_line(fake_llm: FakeLLM, tmp_path: Path) -> None:
    fake_llm.queue(Reply(status=401))
    result = run_cli("ask", "x", "--api-base", fake_llm.url, "-m", "fake", env=_env(tmp_path))
    assert result.returncode == 3
    assert len(result.stderr.strip().splitlines()) == 1 and "HTTP 401" in result.stderr


def test_ask_missing_key(tmp_path: Path) -> None:
    result = run_cli("ask", "x", "-m", "openai/gpt-4o-mini", env=_env(tmp_path))
    assert result.returncode == 2
    assert "OPENAI_API_KEY" in result.stderr and "local/qwen2.5-coder-1.5b" in result.stderr


def test_models_json(tmp_path: Path) -> None:
    env = _env(tmp_path, PROMPTGEN_MODEL_EVAL="openai/gpt-4o", PROMPTGEN_MODELS="a/x;b/y")
    result = run_cli("models", "--json", env=env)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["aliases"]["eval"] == {"model": "openai/gpt-4o", "source": "PROMPTGEN_MODEL_EVAL"}
    assert data["aliases"]["rules"]["model"] == "local/qwen2.5-coder-1.5b"
    assert data["models_under_test"] == ["a/x", "b/y"]
    assert set(data["local_models"]) == {"local/qwen2.5-coder-1.5b", "local/qwen2.5-coder-0.5b"}
    state = data["local_models"]["local/qwen2.5-coder-0.5b"]["status"]
    assert state in ("verified", "installed", "missing", "assembled (not yet verified)")


def test_models_table(tmp_path: Path) -> None:
    result = run_cli("models", env=_env(tmp_path))
    assert result.returncode == 0
    assert "Model aliases" in result.stdout and "Embedded local models" in result.stdout


def run_cli_in(cwd: Path, *args: str, env: dict[str, str]):  # type: ignore[no-untyped-def]
    import subprocess
    import sys

    return subprocess.run(
        [sys.executable, "-m", "promptgen", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**env, "PYTHONPATH": str(REPO)},
        timeout=120,
    )


def test_models_prints_text_with_brackets_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Rich markup must not eat `[local]` (the install command) or a model's brackets."""
    real_version = importlib.metadata.version

    def version(name: str) -> str:  # the embedded model's engine is not installed
        if name == "llama-cpp-python":
            raise importlib.metadata.PackageNotFoundError(name)
        return real_version(name)

    for name in list(os.environ):
        if name.startswith(("PROMPTGEN_", "OPENAI_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("PROMPTGEN_MODEL_EVAL", "a/[b]")
    monkeypatch.setattr(importlib.metadata, "version", version)
    monkeypatch.chdir(tmp_path)
    assert run_app(args=["models"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("llama-cpp-python:"))
    assert line.startswith(
        'llama-cpp-python: not installed (pip install -e ".[local]" in the promptgen checkout); '
    )
    assert "a/[b]" in out


def test_models_and_ask_refuse_bad_values(tmp_path: Path) -> None:
    for args, flag in (
        (["models", "--api-base", ""], "--api-base ''"),
        (["ask", "x", "--api-base", "file:///etc"], "--api-base 'file:///etc'"),
        (["ask", "x", "--temperature", "nan", "--api-base", "http://127.0.0.1:9/v1"], "--temp"),
    ):
        result = run_cli(*args, env=_env(tmp_path))
        assert result.returncode == 2
        assert result.stderr.startswith(f"promptgen: error: {flag}")
        assert len(result.stderr.strip().splitlines()) == 1


def test_ask_max_tokens_has_an_upper_bound(tmp_path: Path) -> None:
    result = run_cli("ask", "Say hi", "--max-tokens", "10000000000", env=_env(tmp_path))
    assert result.returncode == 2
    assert result.stderr == (
        "promptgen: error: --max-tokens 10000000000: must be a finite number, 1-1,000,000\n"
    )
