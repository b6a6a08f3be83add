"""Model output faults are data, not answers (docs/llm.md, docs/metrics.md).

In process: a faulty reply (empty, or cut off at the token limit) is first asked again
as the same request; only a well-formed answer that fails validation gets a repair turn.
A model under test that answers "" again gets a TestRun flagged with its fault, never
judged, not cached, and asked again by a re-run; one cut off again (finish_reason
"length") gave the prompt's answer as deployed: judged as it came back and marked
`cut_off`. End to end: the whole pipeline against ../shared/tools/mockllm.py with 20 %
mixed faults finishes within a few runs of the same command, loses no cell, and never
judges a faulty output; with transient faults it ends as the run without them (skips
when ../shared is absent).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest

from promptgen import load_context
from promptgen.config import build_config
from promptgen.context import Context
from promptgen.gate import Failures, evaluation_failures
from promptgen.llm import LLM, RetryPolicy, load_settings, replies
from promptgen.llm.backend import Backend, BackendPolicy
from promptgen.llm.negotiate import negotiate
from promptgen.llm.replies import FAULT_RETRIES, mended
from promptgen.llm.types import FAULT_TEXT, ChatRequest, RawReply
from promptgen.report.files import write_reports
from promptgen.report.junit import junit_xml
from promptgen.report.overview import overall_compliance, overview
from promptgen.results import MetricResult, Test, TestRun
from promptgen.selection import cells, eval_tests
from promptgen.stages import groundtruth, runs
from tests.conftest import OPEN_GATEWAYS, REPO, run
from tests.fakellm import FakeLLM, Reply, finished_reply
from tests.mockserver import ROLE_MODEL, mockllm
from tests.pipeline_fake import PipelineResponder
from tests.stagekit import config, context, make_llm, schema_names, stage

A = "openai/model-a"
CUT = "The review is clearly posi"


class Faulty(PipelineResponder):
    """Answers the model-under-test call for review 0 with "", for review 1 cut off."""

    def __init__(self) -> None:
        super().__init__()
        self.faults = {"review number 0": finished_reply("  \n", "stop")}
        self.faults["review number 1"] = finished_reply(CUT, "length")

    def _under_test(self, body: dict[str, Any], text: str) -> Reply:
        for marker, reply in self.faults.items():
            if marker in text:
                with self._lock:
                    self.seen.append(body)
                return reply
        return super()._under_test(body, text)


@pytest.fixture
def faulty() -> Iterator[tuple[FakeLLM, Faulty]]:
    responder = Faulty()
    with FakeLLM(responder=responder) as server:
        yield server, responder


def cached_llm(fake: FakeLLM, tmp_path: Path) -> LLM:
    """A gateway on the fake server with a response cache."""
    settings = load_settings(
        {"api_base": fake.url, "eval": "openai/judge-model", "cache_dir": str(tmp_path / "c")},
        env={},
        cwd=tmp_path,
    )
    llm = LLM(settings, retry=RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02))
    OPEN_GATEWAYS.append(llm)
    return llm


def by_review(ctx: Context) -> dict[str, Any]:
    inputs = {t.id: t.inputs["review"] for t in ctx.tests}
    return {inputs[r.test_id]: r for r in ctx.test_runs}


def test_empty_outputs_are_flagged_not_judged_and_cut_off_ones_are_judged(
    faulty: tuple[FakeLLM, Faulty], tmp_path: Path
) -> None:
    fake, responder = faulty
    llm = cached_llm(fake, tmp_path)
    ctx = context(rules=1, tests=4)
    cfg = config(ctx, llm, models={"models": [A]})
    stage("runs", ctx, cfg, llm)
    found = by_review(ctx)
    empty, cut = found["review number 0"], found["review number 1"]
    assert (empty.fault, empty.output, empty.error, empty.cut_off) == (
        "empty", "  \n", f"{A}: {FAULT_TEXT['empty']}", False
    )  # fmt: skip
    assert not empty.ok and empty.metrics == {}
    # The cut-off answer is what the prompt's users would get: judged as it came back.
    assert (cut.fault, cut.output, cut.error, cut.cut_off) == (None, CUT, None, True)
    assert cut.ok and set(cut.metrics) == {"compliance"}
    assert sorted(r.test_id for r in ctx.metric_results) == sorted(
        found[f"review number {i}"].test_id for i in (1, 2, 3)
    )
    assert schema_names(fake).count("ComplianceVerdict") == 3
    # Each faulty reply was asked again once as the same request (this model faults again).
    asked = [json.dumps(b["messages"]) for b in fake.requests if b["model"] == "model-a"]
    assert [sum(f"review number {i}" in m for m in asked) for i in range(4)] == [2, 2, 1, 1]
    record = ctx.stage("runs")
    assert list(record.failures) == [runs.cell_key(*empty.key)]
    # Reports: the empty one flagged, in no rate, an <error> in JUnit; the cut one said.
    assert overall_compliance(ctx) == 100.0
    row = overview(ctx).iloc[0]
    assert (row["runs"], row["errors"], row["faulty"]) == (4, 1, 1)
    assert junit_xml(ctx).count('type="faulty-output"') == 1
    written = {p.name: p.read_text() for p in write_reports(ctx, tmp_path / "out")}
    assert (
        "- **Runs:** 4, 1 errored, of which 1 faulty outputs, not judged (1 empty output); "
        "1 answer cut off at the token limit, judged as they came back" in written["report.md"]
    )
    assert f"{CUT} (cut off at the token limit)" in written["report.html"]
    # The exit: the reason, and what helps (a cut-off judged answer is no failed call).
    said = evaluation_failures(ctx, cfg).said(0.0).one_line()
    assert said.startswith("1 of 7 evaluation calls failed (14.3% > 0.0% allowed")
    assert f"), e.g. {A}: {FAULT_TEXT['empty']}" in said

    # The fault was not cached: the same run asks exactly that cell again.
    responder.faults.clear()
    fake.reset()
    stage("runs", ctx, cfg, llm)
    assert sorted(b["model"] for b in fake.requests) == ["judge-model", "model-a"]
    assert all(r.ok and r.fault is None for r in ctx.test_runs) and len(ctx.test_runs) == 4
    assert overview(ctx).iloc[0]["faulty"] == 0


def test_the_hint_for_answers_cut_off_says_what_helps() -> None:
    ctx = context(rules=1, tests=1)
    ctx.test_runs = [
        TestRun(test_id=ctx.tests[0].id, model=A, error=f"{A}: x", fault="truncated"),
        TestRun(test_id=ctx.tests[0].id, model=A, run_index=1),
    ]
    said = evaluation_failures(ctx, config(ctx, models={"models": [A]})).said(0.0).one_line()
    assert said == (
        f"1 of 2 evaluation calls failed (50.0% > 0.0% allowed by --fail-on-error), e.g. {A}: x "
        "(re-run the same command to retry only those; 1 answer(s) under test were cut off "
        "at the token limit: raise the prompt's max_tokens, or accept a share with "
        "--fail-on-error RATE)"
    )


def test_only_failures_a_rerun_would_retry_fail_the_run() -> None:
    """A failed cell of a model no longer under test, or a failed verdict of a judge no
    longer asked, is never retried: it is history, not work left (exit 0, not 3)."""
    ctx = context(rules=1, tests=1)
    test = ctx.tests[0].id
    ctx.test_runs = [
        TestRun(test_id=test, model=A, output="positive"),
        TestRun(test_id=test, model="openai/gone", error="openai/gone: 503"),
    ]
    ctx.record_verdicts(
        [MetricResult(test_id=test, model=A, metric="compliance", judge="openai/old", error="x")]
    )
    cfg = config(ctx, models={"models": [A]}, evaluation={"compliance": False})
    assert evaluation_failures(ctx, cfg) == Failures(calls=3, failed=0)
    # Under test again, the model's failed cell is work left: it counts.
    cfg = config(ctx, models={"models": [A, "openai/gone"]}, evaluation={"compliance": False})
    assert evaluation_failures(ctx, cfg) == Failures(3, 1, "openai/gone: 503")


SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}


def test_a_faulty_reply_is_asked_again_as_the_same_request(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    """An empty or cut-off reply is a transient fault: the same request once more (so a
    deterministic server answers as without the fault), before any repair turn."""
    assert RetryPolicy().fault_retries == FAULT_RETRIES == 1
    llm = make_llm(fake_llm, tmp_path)
    fake_llm.queue(finished_reply(" ", "stop"), "The whole answer.")
    result = run(llm.complete([{"role": "user", "content": "q"}], model="m"))
    assert (result.ok, result.text, result.fault, result.attempts) == (
        True, "The whole answer.", None, 2
    )  # fmt: skip
    assert (result.usage.calls, len(fake_llm.requests)) == (2, 2)
    assert fake_llm.requests[0] == fake_llm.requests[1]
    # A structured answer cut off: asked again as it was, not repaired.
    fake_llm.reset()
    fake_llm.queue(finished_reply('{"answer": "fi', "length"), '{"answer": "fine"}')
    result = run(llm.complete([{"role": "user", "content": "q2"}], model="m", output=SCHEMA))
    assert (result.ok, result.parsed, len(fake_llm.requests)) == (True, {"answer": "fine"}, 2)
    assert fake_llm.requests[0] == fake_llm.requests[1]
    # A well-formed answer that fails validation gets the repair turn at once.
    fake_llm.reset()
    fake_llm.queue('{"other": "x"}', '{"answer": "fixed"}')
    result = run(llm.complete([{"role": "user", "content": "q3"}], model="m", output=SCHEMA))
    assert (result.ok, result.parsed, len(fake_llm.requests)) == (True, {"answer": "fixed"}, 2)
    assert len(fake_llm.requests[1]["messages"]) == len(fake_llm.requests[0]["messages"]) + 2
    # An answer empty twice stays a fault.
    fake_llm.reset()
    fake_llm.queue(finished_reply("", "stop"), finished_reply("", "stop"))
    result = run(llm.complete([{"role": "user", "content": "q4"}], model="m"))
    assert (result.ok, result.fault, result.error, len(fake_llm.requests)) == (
        False, "empty", f"m: {FAULT_TEXT['empty']}", 2
    )  # fmt: skip


class RunsToTheLimit:
    """A backend whose every reply is cut off at the token limit."""

    def __init__(self, deterministic: bool) -> None:
        self.policy = BackendPolicy(
            concurrency=1, cancellable=True, structured_mode="negotiate",
            uses_api_base=False, per_loop=False, deterministic=deterministic,
        )  # fmt: skip
        self.calls = 0

    async def chat(self, request: ChatRequest, mode: str) -> RawReply:
        self.calls += 1
        return RawReply(text="cut", completion_tokens=5, finish_reason="length")


@pytest.mark.parametrize(("deterministic", "asked"), [(False, 2), (True, 1)])
def test_a_deterministic_backend_is_not_asked_again(
    fake_llm: FakeLLM, tmp_path: Path, deterministic: bool, asked: int
) -> None:
    """The embedded model answers the same request the same way: no retry for a fault."""
    llm = make_llm(fake_llm, tmp_path)
    backend = RunsToTheLimit(deterministic)
    request = ChatRequest(model="m", messages=[{"role": "user", "content": "q"}])

    async def ask() -> Any:
        return await negotiate(llm, cast(Backend, backend), "m", request, "text")

    reply, usage, attempts, error = run(ask())
    assert (reply.fault, error, backend.calls, attempts) == ("truncated", None, asked, asked)
    assert (usage.calls, usage.completion_tokens) == (asked, 5 * asked)


def test_a_request_with_choices_asked_again_keeps_each_whole_choice() -> None:
    def reply(*texts: str) -> RawReply:
        choices = [RawReply(text=t, finish_reason="stop") for t in texts]
        return RawReply(text=texts[0], finish_reason="stop", choices=choices)

    first, again = reply("a", "", "c"), reply("", "b", "")
    assert replies.faulty(first) and replies.faulty(again) and not replies.faulty(reply("a", "b"))
    got = mended(first, again)
    assert (got.text, [c.text for c in got.choices]) == ("a", ["a", "b", "c"])


def test_a_cut_off_structured_answer_is_never_accepted(fake_llm: FakeLLM, tmp_path: Path) -> None:
    """Valid JSON with finish_reason "length", again on the retry of the same request,
    goes to the repair turn like invalid JSON."""
    llm = make_llm(fake_llm, tmp_path)
    cut = finished_reply('{"answer": "fine"}', "length")
    fake_llm.queue(cut, cut, '{"answer": "whole"}')
    result = run(llm.complete([{"role": "user", "content": "q"}], model="m", output=SCHEMA))
    assert result.ok and result.parsed == {"answer": "whole"} and len(fake_llm.requests) == 3
    assert fake_llm.requests[0] == fake_llm.requests[1]
    repair = fake_llm.requests[2]["messages"][-1]["content"]
    assert "cut off at the token limit" in repair
    fake_llm.reset()
    fake_llm.queue(*[cut] * 4)  # the repair turn's cut-off answer is asked again too
    result = run(llm.complete([{"role": "user", "content": "q2"}], model="m", output=SCHEMA))
    assert not result.ok and result.parsed is None and result.fault == "truncated"
    assert "cut off" in (result.error or "") and len(fake_llm.requests) == 4
    assert fake_llm.requests[2] == fake_llm.requests[3]


def test_a_faulty_groundtruth_answer_is_not_accepted(
    faulty: tuple[FakeLLM, Faulty], tmp_path: Path
) -> None:
    fake, responder = faulty
    llm = make_llm(fake, tmp_path, groundtruth="openai/model-a")
    ctx = context(rules=1, tests=2)
    cfg = config(ctx, llm, models={"models": [A]}, evaluation={"groundtruth": True})
    stage("groundtruth", ctx, cfg, llm)
    tests = {t.inputs["review"]: t for t in ctx.tests}
    for review, fault in (("review number 0", "empty"), ("review number 1", "truncated")):
        test: Test = tests[review]
        assert test.groundtruth is None and test.groundtruth_status is None
        # Every candidate (asked at once) faulted: each recorded, none judged.
        mine = [a for a in ctx.groundtruth if a.test_id == test.id]
        assert [a.attempt for a in mine] == [0, 1, 2]
        assert all(a.error == f"{A}: {FAULT_TEXT[fault]}" and a.scores == {} for a in mine)
    assert "GroundtruthScore" not in schema_names(fake)
    assert {i.key for i in groundtruth.todo(ctx, cfg)} == {t.id for t in ctx.tests}
    responder.faults.clear()
    stage("groundtruth", ctx, cfg, llm)
    assert all(t.groundtruth_status == "ok" and t.groundtruth for t in ctx.tests)


# -- end to end: the independent mock server with fault injection --------------------------

# 20 % of all calls fault, more than half of them with an empty or cut-off reply.
FAULTS = [
    "--fail-429", "0.02", "--fail-500", "0.02", "--fail-503", "0.02", "--fail-timeout", "0.01",
    "--fail-garbage", "0.06", "--fail-empty", "0.06", "--fail-reset", "0.01",
]  # fmt: skip
MAX_RUNS = 6


@pytest.fixture
def mock_server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    log = tmp_path / "requests.jsonl"
    args = [*FAULTS, "--seed", "2", "--timeout-sleep", "2", "--retry-after", "0.05"]
    with mockllm(*args, "--log", str(log)) as url:
        yield url, log


def promptgen(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PROMPTGEN_", "OPENAI_"))}
    env["PROMPTGEN_CACHE_DIR"] = str(tmp / "cache")
    env["PROMPTGEN_TIMEOUT"] = "1"  # the mock's timeout fault holds the line for 2 s
    env["PROMPTGEN_MODEL"] = ROLE_MODEL  # every role named: the mock serves several models
    return subprocess.run(
        [sys.executable, "-m", "promptgen", *args],
        capture_output=True, text=True, cwd=REPO, env=env, timeout=120,
    )  # fmt: skip


def test_the_pipeline_survives_mixed_faults(mock_server: tuple[str, Path], tmp_path: Path) -> None:
    url, log = mock_server
    out = tmp_path / "out"
    args = ["samples/classify-sentiment.prompty", "--effort", "min", "--api-base", url]
    args += ["--models", "a;b", "--runs-per-test", "3", "--groundtruth", "--out", str(out), "-q"]
    # The mock's safety verdicts are arbitrary: keep every test, so the runs are as many
    # as the options ask and the faults have calls to hit.
    args.append("--keep-unsafe")
    started = time.monotonic()
    flagged: list[str] = []  # the fault of every faulty run, as each run left it
    cut_off: set[tuple[str, str, int]] = set()  # cells answered cut off (judged)
    codes = []
    for _ in range(MAX_RUNS):
        result = promptgen(tmp_path, *args)
        codes.append(result.returncode)
        assert result.returncode in (0, 3), result.stderr  # done, or failures to retry
        ctx = load_context(out / "context.json")
        flagged += [r.fault for r in ctx.test_runs if r.fault]
        cut_off |= {r.key for r in ctx.test_runs if r.cut_off}
        check_no_faulty_output_judged(ctx)
        if result.returncode == 0:
            break
    assert codes[-1] == 0, (codes, result.stderr)
    assert time.monotonic() - started < 60

    # Nothing lost: every planned cell has exactly one run, every test its rule.
    cfg = build_config(ctx.prompt, ctx.options, ctx.option_sources)
    assert cfg.models == ("a", "b")
    planned = [(t.id, m, i) for t, m, i in cells(ctx, cfg)]
    assert planned and sorted(r.key for r in ctx.test_runs) == sorted(planned)
    assert all(r.ok and r.metrics for r in ctx.test_runs)
    ruled = [t for t in ctx.tests if t.origin not in ("baseline", "sample")]
    assert ruled and all(ctx.rule(t.rule_id) is not None for t in ruled)
    # The tests evaluated (valid, not flagged, within maxTestsToRun) all have a reference.
    evaluated = eval_tests(ctx, cfg)
    assert all(t.groundtruth_status is not None for t in evaluated)
    # Every empty or cut-off reply ("garbage": finish_reason length) the mock sent a model
    # under test was asked again as the same request: only a reply faulty twice in a row
    # is recorded, as a fault when the second was empty, else as a judged answer marked
    # cut_off. So each recorded one took two of the faulty replies sent, most took none.
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    to_models = [e["fault"] for e in entries if e["model"] in ("a", "b")]
    assert {"empty", "garbage"} <= set(to_models), "the seed should fault some such calls"
    sent = to_models.count("empty") + to_models.count("garbage")
    assert set(flagged) <= {"empty"} and 2 * (len(flagged) + len(cut_off)) < sent
    assert all(r.metrics for r in ctx.test_runs if r.cut_off)


def check_no_faulty_output_judged(ctx: Context) -> None:
    """A run with a verdict has a whole answer; a faulty run has none."""
    judged = {r.key[:3] for r in ctx.metric_results}
    for run_ in ctx.test_runs:
        if run_.key in judged:
            assert run_.fault is None and (run_.output or "").strip(), run_
        if run_.fault is not None:
            assert run_.metrics == {} and run_.error, run_


# ~20 % transient faults: empty and cut-off replies, rate limits and server errors.
TRANSIENT = ["--fail-429", "0.05", "--fail-500", "0.05"]
TRANSIENT += ["--fail-garbage", "0.05", "--fail-empty", "0.05"]


def test_transient_faults_change_nothing(tmp_path: Path) -> None:
    """Against a deterministic server (identical requests, identical answers; faults drawn
    per attempt), the run with transient faults, re-run until it is done, ends with the
    rules, tests, runs and verdicts of the run without faults."""
    args = ["samples/classify-sentiment.prompty", "--effort", "min", "--models", "a;b"]
    # One run per test: no two requests the same, so the mock's faults are drawn the same
    # way whatever order the calls arrive in.
    args += ["--runs-per-test", "1", "--groundtruth", "--keep-unsafe", "-q"]
    found = []
    for name, faults in (("clean", []), ("faulty", TRANSIENT)):
        tmp = tmp_path / name
        log = tmp / "requests.jsonl"
        tmp.mkdir()
        with mockllm(*faults, "--seed", "5", "--retry-after", "0.05", "--log", str(log)) as url:
            codes = []
            for _ in range(MAX_RUNS):
                result = promptgen(tmp, *args, "--api-base", url, "--out", str(tmp / "out"))
                codes.append(result.returncode)
                assert result.returncode in (0, 3), result.stderr
                if result.returncode == 0:
                    break
        assert codes[-1] == 0, (codes, result.stderr)
        found.append(outcome(load_context(tmp / "out" / "context.json")))
        drawn = [json.loads(line)["fault"] for line in log.read_text().splitlines()]
    clean, faulty = found
    assert {"429", "500", "garbage", "empty"} <= set(drawn), "the seed should draw every fault"
    assert clean["runs"] and clean["verdicts"]
    for part in clean:
        assert faulty[part] == clean[part], part


def outcome(ctx: Context) -> dict[str, list[Any]]:
    """What a run concluded, by content: rules, test inputs, run outputs, verdicts."""
    inputs = {t.id: json.dumps(t.inputs, sort_keys=True) for t in ctx.tests}
    return {
        "rules": sorted(r.text for r in ctx.rules),
        "tests": sorted(inputs.values()),
        "groundtruth": sorted((inputs[t.id], t.groundtruth or "") for t in ctx.tests),
        "runs": sorted(
            (inputs[r.test_id], r.model, r.run_index, r.output or "", r.cut_off, r.fault or "")
            for r in ctx.test_runs
        ),
        "verdicts": sorted(
            (inputs[m.test_id], m.model, m.run_index, m.metric, m.judge or "", m.outcome or "")
            for m in ctx.metric_results
        ),
    }
