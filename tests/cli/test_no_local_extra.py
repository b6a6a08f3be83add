"""An install without the `local` extra (no llama-cpp-python) and no key: every model a
run will use is checked before the first call, and an error inside the pipeline's task
groups reaches the user as itself, in one line."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from promptgen.llm.weights import SPECS
from tests.conftest import REPO, isolated_env
from tests.fakellm import FakeLLM

HAIKU = REPO / "samples" / "haiku.md"
NO_ENGINE = (
    "promptgen: error: local/qwen2.5-coder-1.5b needs llama-cpp-python, which is not "
    'installed (pip install -e ".[local]" in the promptgen checkout for the offline model, '
    "or use a provider: "
    "set OPENAI_API_KEY, or give --api-base URL)\n"
)


def promptgen(tmp_path: Path, *args: str, engine: bool = False) -> subprocess.CompletedProcess[str]:
    """`python -m promptgen ARGS` without a key; unless `engine`, `import llama_cpp` fails
    as it does where the `local` extra is not installed (a sitecustomize blocks it)."""
    env = isolated_env(tmp_path)
    if not engine:
        blocker = tmp_path / "no-llama"
        blocker.mkdir(exist_ok=True)
        (blocker / "sitecustomize.py").write_text("import sys\nsys.modules['llama_cpp'] = None\n")
        env["PYTHONPATH"] = f"{blocker}:{env['PYTHONPATH']}"
    return subprocess.run(
        [sys.executable, "-m", "promptgen", *args],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300,
    )  # fmt: skip


def test_default_local_model_without_engine_is_one_line_before_any_call(tmp_path: Path) -> None:
    result = promptgen(tmp_path, str(HAIKU), "--effort", "min", "--out", "out")
    assert (result.returncode, result.stdout, result.stderr) == (2, "", NO_ENGINE)
    assert not (tmp_path / "out" / "context.json").exists()  # nothing run, nothing saved


@pytest.mark.parametrize(
    ("flags", "unnamed"),
    [
        (("--models", "local/qwen2.5-coder-1.5b"), "--rules-model and --eval-model"),
        (
            ("--models", "openai/under-test", "--eval-model", "local/qwen2.5-coder-1.5b"),
            "--rules-model",
        ),
    ],
)
def test_local_model_under_test_or_judge_is_checked_before_generation(
    tmp_path: Path, fake_llm: FakeLLM, flags: tuple[str, ...], unnamed: str
) -> None:
    result = promptgen(tmp_path, str(HAIKU), "--effort", "min", "--api-base", fake_llm.url, *flags)
    # The roles with no model named get the server's one model, said first.
    using = f"promptgen: using default, the one model {fake_llm.url} serves "
    assert (result.returncode, result.stderr) == (
        2,
        f"{using}({unnamed} to choose another)\n{NO_ENGINE}",
    )
    assert fake_llm.requests == []  # no generation call spent before the error


@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None, reason="needs llama_cpp")
def test_error_inside_the_task_group_is_reported_as_itself(tmp_path: Path) -> None:
    """A model file that fails its check is found mid-run, in a stage's task: the user
    reads that error, not "internal error: ExceptionGroup", and exit code 2."""
    spec = SPECS["qwen2.5-coder-1.5b"]
    bad = tmp_path / "cache" / "models" / spec.filename
    bad.parent.mkdir(parents=True)
    bad.write_bytes(b"not a gguf")
    result = promptgen(tmp_path, str(HAIKU), "--effort", "min", "--out", "out", engine=True)
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines()[-1] == (
        f"promptgen: error: local model file {bad} has 10 bytes, expected {spec.size:,} "
        "(delete it and run again; it is rebuilt from the installed packages)"
    )
    assert "internal error" not in result.stderr
    # The stage that met it is saved as failed with it; the stages stopped with it say
    # so (not "interrupted", which reads as Ctrl-C); none is left "running".
    stages = json.loads((tmp_path / "out" / "context.json").read_text())["stages"]
    failed = [n for n, r in stages.items() if r["status"] == "failed"]
    assert failed and {stages[n]["error"] for n in failed} == {
        result.stderr.splitlines()[-1].removeprefix("promptgen: error: ")
    }
    stopped = {n: r["error"] for n, r in stages.items() if r["status"] == "interrupted"}
    why = {f"stopped: stage {n} failed; a re-run resumes" for n in failed}
    assert set(stopped.values()) <= why and len(set(stopped.values())) <= 1
    assert {r["status"] for r in stages.values()} <= {"done", "failed", "interrupted"}
    lines = result.stderr.splitlines()
    assert sorted(line for line in lines if "interrupted" in line) == sorted(
        f"promptgen: {n}: interrupted, 0 calls, 0 tokens, {stages[n]['duration_s']:.1f} s ({error})"
        for n, error in stopped.items()
    )


def test_every_stage_says_which_models_it_calls() -> None:
    """The check before the first call covers each stage's models (none is guessed)."""
    from promptgen.pipeline import STAGE_MODELS, STAGES

    assert set(STAGE_MODELS) == set(STAGES)
