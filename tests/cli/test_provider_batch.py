"""`promptgen FILE --batch` end to end: the runs and the judges' verdicts go through the
fake Batch API and equal a run without --batch; a run killed while its batch is in
progress resumes by polling it; batch calls cost half the normal price."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from promptgen import load_context
from promptgen.llm.batch import batch_price
from tests.cli.test_resume import _env
from tests.conftest import REPO
from tests.fake_batches import FakeBatches
from tests.fakellm import FakeLLM
from tests.pipeline_fake import PipelineResponder

FAST = {"PROMPTGEN_BATCH_POLL": "0.05", "PROMPTGEN_BATCH_MAX_POLL": "0.1"}
FAST["PROMPTGEN_BATCH_GATHER"] = "0.1"


def _command(url: str, out: Path, *more: str) -> list[str]:
    return [
        sys.executable, "-m", "promptgen", "samples/classify-sentiment.prompty", "--effort", "low",
        "--models", "m1;m2", "--api-base", url, "--out", str(out), "-q", *more,
    ]  # fmt: skip


def _responder() -> PipelineResponder:
    responder = PipelineResponder()
    responder.by_content = True  # the same request gets the same answer, batched or not
    responder.bad_every = 3
    return responder


def _result(out: Path) -> dict[str, Any]:
    ctx = load_context(out / "context.json")
    return {
        "tests": [(t.id, t.valid) for t in ctx.tests],
        "runs": sorted(
            (r.test_id, r.model, r.run_index, r.output, r.metrics["compliance"].outcome)
            for r in ctx.test_runs
        ),
        "verdicts": sorted(
            (v.test_id, v.model, v.run_index, v.metric, v.outcome) for v in ctx.metric_results
        ),
    }


def _run(cmd: list[str], tmp: Path, **env: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        cmd, cwd=REPO, env={**_env(tmp), **FAST, **env}, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("reference")
    with FakeLLM(responder=_responder()) as fake:
        _run(_command(fake.url, tmp / "out"), tmp)
    return _result(tmp / "out")


def _cells(fake: FakeBatches) -> list[str]:
    """custom_ids of the model-under-test lines of every batch created, in order."""
    return [
        line["custom_id"]
        for batch in fake.created
        for line in fake.batch_lines(batch)
        if "response_format" not in line["body"]
    ]


def test_batch_run_equals_a_run_one_by_one_split_and_retried(
    reference: dict[str, Any], tmp_path: Path
) -> None:
    with FakeBatches(responder=_responder()) as fake:
        # A tiny batch size: several batches; one cell's line fails once and is retried.
        cells = len(reference["runs"])
        first_cell = sorted(r[0] for r in reference["runs"])[0] + "|m1|0"
        fake.fail = {first_cell}
        _run(_command(fake.url, tmp_path / "out", "--batch"), tmp_path,
             PROMPTGEN_BATCH_MAX_REQUESTS="5")  # fmt: skip
        direct = [r for r in fake.requests if "response_format" not in r]
        created = [fake.batch_lines(b) for b in fake.created]
    assert _result(tmp_path / "out") == reference
    run_cells = _cells(fake)
    assert len(run_cells) == cells + 1  # every cell once, the failed one twice
    assert run_cells.count(first_cell) == 2
    assert all(len(lines) <= 5 for lines in created) and len(created) > cells // 5
    # The fake answers each batched line as a request: one per cell means none of the
    # models under test was called one by one besides.
    assert len(direct) == cells
    ctx = load_context(tmp_path / "out" / "context.json")
    assert [j.id for j in ctx.batches] == fake.created and all(j.finished for j in ctx.batches)


def test_killed_while_polling_resumes_by_polling(reference: dict[str, Any], tmp_path: Path) -> None:
    with FakeBatches(responder=_responder(), polls=100_000) as fake:
        proc = subprocess.Popen(
            _command(fake.url, tmp_path / "out", "--batch"), cwd=REPO,
            env={**_env(tmp_path), **FAST}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        deadline = time.time() + 120
        while time.time() < deadline and not (len(fake.created) == 2 and len(fake.retrieved) >= 4):
            assert proc.poll() is None, proc.communicate()[1]
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
        killed = list(fake.created)
        polls_before = len(fake.retrieved)
        assert len(killed) == 2  # the runs' batches (one per model), in progress
        fake.polls = 2
        _run(_command(fake.url, tmp_path / "out", "--batch"), tmp_path)
        polled_again = [fake.retrieved[polls_before:].count(b) for b in killed]
        cells = _cells(fake)
    assert _result(tmp_path / "out") == reference
    assert min(polled_again) >= 1
    assert fake.created[:2] == killed and len(cells) == len(set(cells))  # never resubmitted


def test_batch_calls_cost_half_the_normal_price(tmp_path: Path) -> None:
    with FakeBatches(responder=_responder()) as fake:
        cmd = _command(fake.url, tmp_path / "out", "--batch")
        cmd[cmd.index("m1;m2")] = "openai/gpt-4o-mini"
        _run(cmd, tmp_path)
    ctx = load_context(tmp_path / "out" / "context.json")
    usage = ctx.usage.by_model["openai/gpt-4o-mini"]
    cells = len(ctx.test_runs)
    assert usage.calls == cells and usage.prompt_tokens > 0
    # gpt-4o-mini lists $0.15 / $0.60 per million tokens; a batch pays half.
    normal = (usage.prompt_tokens * 0.15 + usage.completion_tokens * 0.60) / 1e6
    assert usage.cost == pytest.approx(normal / 2)
    assert batch_price("openai/gpt-4o-mini", 1000, 100) == pytest.approx(
        (1000 * 0.15 + 100 * 0.60) / 1e6 / 2
    )


def test_a_server_without_the_batch_api_is_said_once_per_model_and_in_the_report(
    tmp_path: Path,
) -> None:
    """--batch that fell back to calls one by one (at the normal price) is not silent."""
    with FakeBatches(responder=PipelineResponder()) as fake:
        fake.refuse = True
        cmd = _command(fake.url, tmp_path / "out", "--batch", "--max-tests-to-run", "2")
        cmd[cmd.index("low")] = "min"
        done = _run(cmd, tmp_path)
        assert not fake.created
    refused = (
        "the provider refused the batch (HTTP 404): Error code: 404 - "
        "{'error': {'message': 'no batches here', 'type': 'x'}}; called one by one"
    )
    said = [line for line in done.stderr.splitlines() if "--batch" in line]
    assert sorted(said) == [  # once per model (-q or not), the judge's model too
        f"promptgen: warning: --batch: {model}: {refused}, at the normal price (not the batch rate)"
        for model in ("m1", "m2", "openai/default")
    ]
    report = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert (
        "- **--batch:** 3 model(s) called one by one, at the normal price (not the batch rate):\n"
        f"  - m1: {refused}\n  - m2: {refused}\n  - openai/default: {refused}\n"
    ) in report
