"""Saved runs to export: real pipeline runs against the fake server, made once per session.

`sentiment_run`: samples/classify-sentiment.prompty (a .prompty with a custom metric
beside it) on two models under test, with groundtruth and deterministic checks.
`summarize_run`: samples/summarize.prompt.yml (a GitHub Models file with testData and
evaluators of its own) on one model, generation and evaluation.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from promptgen import Context, load_context
from tests.cli.test_pipeline import promptgen
from tests.fakellm import FakeLLM
from tests.pipeline_fake import PipelineResponder


@dataclass
class SavedRun:
    path: Path  # context.json
    ctx: Context
    server: FakeLLM  # still running: exports can be run against it


@pytest.fixture(scope="session")
def export_server() -> Iterator[FakeLLM]:
    with FakeLLM(responder=PipelineResponder()) as fake:
        yield fake


def _run(tmp: Path, server: FakeLLM, prompt: str, *args: str) -> SavedRun:
    out = tmp / "out"
    result = promptgen(
        tmp, prompt, "--effort", "min", "--api-base", server.url, "--out", str(out),
        "--quiet", *args,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return SavedRun(out / "context.json", load_context(out / "context.json"), server)


# Tests of the sentiment run: a test per slot (4 rules and 4 inverses; the 4 labels, the
# delivery-company exception, 4 temptations (one the review about both product and
# delivery), 3 boundary inputs; 2 model behaviours), minus the invalid ones; and the
# review of the prompt's own input sample (the blender).
SENTIMENT_TESTS = 15


@pytest.fixture(scope="session")
def sentiment_run(tmp_path_factory: pytest.TempPathFactory, export_server: FakeLLM) -> SavedRun:
    tmp = tmp_path_factory.mktemp("sentiment")
    return _run(
        tmp, export_server, "samples/classify-sentiment.prompty",
        "--models", "openai/gpt-4o-mini;azure/my-deployment", "--groundtruth-model", "gt",
        "--check", "icontains=answer", "--check", "not-contains=VIOLATION",
        "--check", "word-count={max: 40}", "--check", "regex=^[a-z]",
    )  # fmt: skip


@pytest.fixture(scope="session")
def summarize_run(tmp_path_factory: pytest.TempPathFactory, export_server: FakeLLM) -> SavedRun:
    tmp = tmp_path_factory.mktemp("summarize")
    return _run(
        tmp, export_server, "samples/summarize.prompt.yml", "--models", "openai/gpt-4o-mini"
    )
