"""The pipeline against an independent server: ../shared/tools/mockllm.py, which answers
every structured request with JSON valid against the schema it receives and nothing
more (`--literal 1`). Skips when ../shared is absent."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from promptgen import load_context
from tests.cli.test_pipeline import promptgen
from tests.mockserver import ROLE_MODEL, mockllm


@pytest.fixture
def literal_server() -> Iterator[str]:
    with mockllm("--literal", "1") as url:
        yield url


@pytest.mark.parametrize("effort", ["min", "low"])
def test_a_schema_literal_server_finishes_every_stage(
    literal_server: str, tmp_path: Path, effort: str
) -> None:
    out = tmp_path / "out"
    args = ["--effort", effort, "--api-base", literal_server, "--out", str(out), "-q"]
    args += ["--rules-model", ROLE_MODEL, "--eval-model", ROLE_MODEL]
    # Schema-only safety verdicts are arbitrary labels: keep flagged tests so runs happen.
    args.append("--keep-unsafe")
    result = promptgen(tmp_path, "samples/classify-sentiment.prompty", *args, "--models", "m")
    assert result.returncode == 0, result.stderr
    ctx = load_context(out / "context.json")
    assert all(r.status == "done" for r in ctx.stages.values()), ctx.stages
    # One inverse per rule, each under its rule's number, linked by id.
    assert sorted(r.inverse_of for r in ctx.inverse_rules) == sorted(r.id for r in ctx.rules)
    generated = [t for t in ctx.tests if t.origin != "sample"]  # the blender sample: no rule
    assert generated and all(ctx.rule(t.rule_id) is not None for t in generated)
    assert ctx.safety is not None and all(t.safety is not None for t in generated)
    assert ctx.test_runs and all("compliance" in r.metrics for r in ctx.test_runs)
