"""`promptgen configure` through the real CLI, checking models against a real HTTP server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO
from tests.fakellm import FakeLLM, Reply

KEY = "sk-test-configure-0123456789"


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    drop = ("PROMPTGEN_", "OPENAI_", "AZURE_", "GITHUB_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    return {**env, "PROMPTGEN_CACHE_DIR": str(tmp_path / "cache"), **extra}


def configure(
    tmp_path: Path, *args: str, stdin: str | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "promptgen", "configure", *args],
        input=stdin if stdin is not None else "",
        capture_output=True,
        text=True,
        cwd=REPO,
        env=_env(tmp_path, **env),
        timeout=120,
        start_new_session=True,  # no terminal: keys are read from stdin
    )


def toml(folder: Path) -> dict[str, Any]:
    return tomllib.loads((folder / "promptgen.toml").read_text())


def test_non_interactive_writes_models_key_and_checks(fake_llm: FakeLLM, tmp_path: Path) -> None:
    folder = tmp_path / "proj"
    result = configure(
        tmp_path, "--provider", "openai-compatible", "--api-base", fake_llm.url,
        "--model", "small", "--eval-model", "judge", "--models", "small;big",
        "--api-key", KEY, "--concurrency", "3", "--dir", str(folder), "--yes",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert toml(folder) == {
        "api_base": fake_llm.url,
        "concurrency": 3,
        "models": {
            "rules": "small",
            "eval": "judge",
            "groundtruth": "small",
            "baseline": "small",
            "store": "small",
            "under_test": ["small", "big"],
        },
    }
    assert (folder / ".env").read_text() == f"OPENAI_API_KEY='{KEY}'\n"
    assert (folder / ".env").stat().st_mode & 0o777 == 0o600
    assert KEY not in (folder / "promptgen.toml").read_text()
    assert KEY not in result.stdout + result.stderr  # masked: sk-...6789
    assert "OPENAI_API_KEY=sk-...6789" in result.stdout
    # one check per distinct model, with the key in the Authorization header
    assert sorted(r["model"] for r in fake_llm.requests) == ["big", "judge", "small"]
    assert all(r["messages"] == [{"role": "user", "content": "Say OK"}] for r in fake_llm.requests)
    for model in ("small", "judge", "big"):
        assert f"ok {model}: answered 'ok'" in result.stdout
    # the `promptgen models` table, read from the file just written
    assert "│ eval        │ judge " in result.stdout
    assert "│ under test  │ small, big " in result.stdout
    assert not (folder / ".gitignore").exists()  # not in a git repository


def test_failed_check_is_reported_and_exit_3(fake_llm: FakeLLM, tmp_path: Path) -> None:
    fake_llm.responder = lambda body: (
        Reply(status=401, content="bad key") if body["model"] == "denied" else Reply("OK")
    )
    result = configure(
        tmp_path, "--provider", "compatible", "--api-base", fake_llm.url, "--model", "fine",
        "--models", "fine;denied", "--dir", str(tmp_path / "p"), "--yes",
    )  # fmt: skip
    assert result.returncode == 3
    lines = result.stdout.splitlines()
    assert "ok fine: answered 'OK'" in " ".join(lines)
    failed = [line for line in lines if line.startswith("failed denied:")]
    assert len(failed) == 1 and "401" in failed[0]
    assert "1 of 2 models failed the check" in result.stderr
    assert toml(tmp_path / "p")["models"]["under_test"] == ["fine", "denied"]  # still written


def test_no_check_makes_no_call(fake_llm: FakeLLM, tmp_path: Path) -> None:
    result = configure(
        tmp_path, "--provider", "openai-compatible", "--api-base", fake_llm.url, "-m", "m",
        "--dir", str(tmp_path), "--yes", "--no-check",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert fake_llm.requests == []
    assert "│ rules       │ m " in result.stdout


def test_merges_with_existing_toml_and_env(fake_llm: FakeLLM, tmp_path: Path) -> None:
    (tmp_path / "promptgen.toml").write_text(
        'api_base = "http://127.0.0.1:1/v1"\nconcurrency = 5\n[models]\nbaseline = "openai/x"\n'
        'rules = "old"\n[report]\ntitle = "Mine"\nsizes = [1, 2.5]\n'
    )
    (tmp_path / ".env").write_text("# mine\nOTHER=keep me\nOPENAI_API_KEY=old-key-value-000\n")
    result = configure(
        tmp_path, "--provider", "openai", "--model", "gpt-4o-mini", "--api-key", KEY,
        "--dir", str(tmp_path), "--yes", "--no-check",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert toml(tmp_path) == {
        "concurrency": 5,  # kept; api_base removed: openai is not that server
        "models": {
            "baseline": "openai/gpt-4o-mini",  # --model sets every role
            "rules": "openai/gpt-4o-mini",
            "eval": "openai/gpt-4o-mini",
            "groundtruth": "openai/gpt-4o-mini",
            "store": "openai/gpt-4o-mini",
            "under_test": ["openai/gpt-4o-mini"],
        },
        "report": {"title": "Mine", "sizes": [1, 2.5]},
    }
    assert (tmp_path / ".env").read_text() == f"# mine\nOTHER=keep me\nOPENAI_API_KEY='{KEY}'\n"
    again = configure(
        tmp_path, "--provider", "openai", "--model", "gpt-4o-mini", "--dir", str(tmp_path),
        "--yes", "--no-check",
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert "OPENAI_API_KEY: kept as it is in .env" in again.stdout
    assert (tmp_path / ".env").read_text().count("OPENAI_API_KEY") == 1


def test_gitignore_only_in_a_git_repository(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / ".gitignore").write_text("*.pyc")  # no final newline
    args = ("--provider", "openai", "-m", "gpt-4o-mini", "--api-key", KEY, "--yes", "--no-check")
    for _ in range(2):  # idempotent
        result = configure(tmp_path, *args, "--dir", str(repo))
        assert result.returncode == 0, result.stderr
    assert (repo / ".gitignore").read_text() == "*.pyc\n.env\n"
    plain = tmp_path / "plain"
    assert configure(tmp_path, *args, "--dir", str(plain)).returncode == 0
    assert (plain / ".env").is_file() and not (plain / ".gitignore").exists()


def test_interactive_answers_from_stdin(fake_llm: FakeLLM, tmp_path: Path) -> None:
    answers = [
        "openai-compatible",  # provider
        fake_llm.url,  # server URL
        KEY,  # key
        "m1",  # model for every role
        "",  # rules: m1
        "judge",  # eval
        "",  # groundtruth: m1
        "m1;m2",  # under test
        "y",  # write?
    ]
    result = configure(tmp_path, "--dir", str(tmp_path), stdin="\n".join(answers) + "\n")
    assert result.returncode == 0, result.stderr
    assert toml(tmp_path)["models"] == {
        "rules": "m1", "eval": "judge", "groundtruth": "m1", "baseline": "m1", "store": "m1",
        "under_test": ["m1", "m2"],
    }  # fmt: skip
    assert toml(tmp_path)["api_base"] == fake_llm.url
    assert f"OPENAI_API_KEY='{KEY}'" in (tmp_path / ".env").read_text()
    assert KEY not in result.stdout + result.stderr
    assert sorted(r["model"] for r in fake_llm.requests) == ["judge", "m1", "m2"]


def test_interactive_declined_writes_nothing(tmp_path: Path) -> None:
    stdin = "local\n\n\n\n\n\nn\n"
    result = configure(tmp_path, "--dir", str(tmp_path), stdin=stdin)
    assert result.returncode == 130
    assert not (tmp_path / "promptgen.toml").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--model", "m"], "which provider? (pass --provider"),
        (["--provider", "openai", "-m", "m"], "openai: no API key (pass --api-key"),
        (["--provider", "azure", "--api-key", KEY, "-m", "d"], "azure: which endpoint?"),
        (["--provider", "openai-compatible", "-m", "m"], "openai-compatible: which endpoint?"),
        (["--provider", "openai-compatible"], "openai-compatible: which model?"),
        (["--provider", "nope"], "unknown provider 'nope'"),
        (["--provider", "openai", "--api-key", KEY, "--concurrency", "0"], "at least 1"),
        (
            ["--provider", "openai", "--api-key", KEY, "--concurrency", "100000000000"],
            "--concurrency 100000000000: must be at most 1024 (accepted: 1-1024)",
        ),
    ],
)
def test_missing_values_are_one_line_errors(tmp_path: Path, args: list[str], message: str) -> None:
    result = configure(tmp_path, *args, "--dir", str(tmp_path), "--yes", "--no-check")
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and message in result.stderr
    assert not (tmp_path / "promptgen.toml").exists()


def test_azure_and_github_write_what_litellm_reads(tmp_path: Path) -> None:
    azure = tmp_path / "azure"
    result = configure(
        tmp_path, "--provider", "azure", "--api-base", "https://res.openai.azure.com",
        "--api-key", KEY, "-m", "my-deployment", "--dir", str(azure), "--yes", "--no-check",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert toml(azure)["models"]["rules"] == "azure/my-deployment"
    assert (azure / ".env").read_text() == (
        "AZURE_API_BASE='https://res.openai.azure.com'\nAZURE_API_VERSION='2024-10-21'\n"
        f"AZURE_API_KEY='{KEY}'\n"
    )
    github = tmp_path / "github"
    token = "ghp_0123456789abcdefghij"
    result = configure(
        tmp_path, "--provider", "github", "--dir", str(github), "--yes", "--no-check",
        GITHUB_TOKEN=token,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert toml(github)["models"]["eval"] == "github/gpt-4o-mini"
    assert (github / ".env").read_text() == f"GITHUB_API_KEY='{token}'\n"
    assert token not in result.stdout


def test_unreachable_and_keyless_models_fail_their_check(tmp_path: Path) -> None:
    """A model whose key is absent fails with the gateway's own line; a server that is not
    there fails too (port 9 on 127.0.0.1: nothing listens)."""
    result = configure(
        tmp_path, "--provider", "ollama", "--api-base", "http://127.0.0.1:9", "-m",
        "llama3.2", "--models", "openai/gpt-4o-mini", "--dir", str(tmp_path), "--yes",
    )  # fmt: skip
    assert result.returncode == 3
    failed = [line for line in result.stdout.splitlines() if line.startswith("failed")]
    assert failed[0].startswith("failed ollama/llama3.2: ")
    assert failed[1] == (
        "failed openai/gpt-4o-mini: no credentials for openai/gpt-4o-mini: set OPENAI_API_KEY "
        "(or put it in .env) (or use the offline model: --model local/qwen2.5-coder-1.5b)"
    )
    assert (tmp_path / ".env").read_text() == "OLLAMA_API_BASE='http://127.0.0.1:9'\n"


@pytest.mark.parametrize(
    ("provider", "model", "expected"),
    [
        ("ollama", "llama3.2", "ollama/llama3.2"),
        ("openai-compatible", "small", "small"),
    ],
)
def test_model_sets_every_role(
    fake_llm: FakeLLM, tmp_path: Path, provider: str, model: str, expected: str
) -> None:
    """`--model` is the model of every role, baseline and store too: none falls back to
    `openai/default` on the server, or to `openai/gpt-4o-mini` on another (paid)
    provider because OPENAI_API_KEY happens to be set."""
    folder = tmp_path / "proj"
    result = configure(
        tmp_path, "--provider", provider, "--api-base", fake_llm.url, "--model", model,
        "--dir", str(folder), "--yes", "--no-check", OPENAI_API_KEY=KEY,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    roles = ("rules", "eval", "groundtruth", "baseline", "store")
    assert toml(folder)["models"] == {**dict.fromkeys(roles, expected), "under_test": [expected]}
    shown = subprocess.run(
        [sys.executable, "-m", "promptgen", "models", "--json"],
        capture_output=True, text=True, cwd=folder, timeout=120,
        env=_env(tmp_path, OPENAI_API_KEY=KEY),
    )  # fmt: skip
    aliases = json.loads(shown.stdout)["aliases"]
    config = f"config {folder / 'promptgen.toml'}"
    assert aliases == {role: {"model": expected, "source": config} for role in roles}
