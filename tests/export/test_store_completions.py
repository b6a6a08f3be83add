"""`--store-completions`: the runs on OpenAI-compatible models carry `store` and metadata.

Both ways a run reaches an OpenAI model are checked over real HTTP: an OpenAI-compatible
server (`--api-base`, the openai SDK) and litellm's provider routing (`openai/...` with
OPENAI_API_BASE).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from promptgen import load_context
from promptgen.llm.local import LocalBackend
from promptgen.prompting.invoke import split_label
from tests.conftest import REPO
from tests.fakellm import FakeLLM
from tests.pipeline_fake import PipelineResponder

SAMPLE = "samples/classify-sentiment.prompty"


def _promptgen(tmp: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("PROMPTGEN_", "OPENAI_"))}
    base.update(env, PROMPTGEN_CACHE_DIR=str(tmp / "cache"))
    return subprocess.run(
        [sys.executable, "-m", "promptgen", *args],
        capture_output=True, text=True, cwd=REPO, env=base, timeout=300,
    )  # fmt: skip


@pytest.mark.parametrize("route", ["openai-compatible", "litellm"])
def test_stored_runs_carry_store_and_metadata(route: str, tmp_path: Path) -> None:
    responder = PipelineResponder()
    with FakeLLM(responder=responder) as fake:
        out = tmp_path / "out"
        args = [SAMPLE, "--effort", "min", "--out", str(out), "--quiet", "--store-completions"]
        args += ["--models", "openai/gpt-4o-mini", "--runs-per-test", "2"]
        if route == "openai-compatible":
            env: dict[str, str] = {}
            args += ["--api-base", fake.url]
        else:
            env = {"OPENAI_API_BASE": fake.url, "OPENAI_API_KEY": "sk-test-not-a-real-key"}
            args += ["--rules-model", "openai/gpt-4o-mini", "--eval-model", "openai/gpt-4o-mini"]
        result = _promptgen(tmp_path, env, *args)
        assert result.returncode == 0, result.stderr
        bodies = list(responder.seen)  # the models under test's calls
        stored = [b for b in fake.requests if "store" in b or "metadata" in b]
    ctx = load_context(out / "context.json")
    assert ctx.options.evaluation.store_completions is True  # kept for a resume
    assert len(bodies) == len(ctx.test_runs) == 2 * len({r.test_id for r in ctx.test_runs})
    tests = {t.id: t for t in ctx.tests}
    seen = set()
    for body in bodies:
        assert body["store"] is True
        meta = body["metadata"]
        test = tests[meta["test_id"]]
        assert meta["promptgen_prompt"] == "classify-sentiment"
        assert meta["promptgen_run"] == ctx.run_id
        assert meta["rule_id"] == (test.rule_id or "")
        assert meta["scenario"] == (test.scenario or "")
        assert meta["inverse"] == ("true" if test.inverse else "false")
        assert meta["split"] == split_label(test.id)
        assert all(isinstance(v, str) and len(v) <= 512 for v in meta.values())
        assert len(meta) <= 16
        seen.add((meta["test_id"], meta["run_index"]))
    assert len(seen) == len(bodies)  # every run is its own stored completion
    # only the runs are stored: generation and judge calls carry no `store`
    assert len(stored) == len(bodies)
    assert ctx.stages["runs"].notes == {}


def test_without_the_flag_nothing_is_stored(tmp_path: Path) -> None:
    responder = PipelineResponder()
    with FakeLLM(responder=responder) as fake:
        args = [SAMPLE, "--effort", "min", "--out", str(tmp_path / "out"), "--quiet"]
        result = _promptgen(tmp_path, {}, *args, "--models", "m", "--api-base", fake.url)
        assert result.returncode == 0, result.stderr
        requests = list(fake.requests)
    assert requests and not any("store" in b or "metadata" in b for b in requests)


def test_the_split_is_stable_and_mostly_train() -> None:
    labels = [split_label(f"test-{i:04d}") for i in range(1000)]
    assert labels == [split_label(f"test-{i:04d}") for i in range(1000)]
    assert 150 <= labels.count("test") <= 250  # about one in five


def test_the_embedded_model_stores_nothing() -> None:
    assert LocalBackend.stores_completions(LocalBackend.__new__(LocalBackend), "x") is False
