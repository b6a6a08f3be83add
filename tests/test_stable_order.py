"""Results in a stable order: whatever order the answers come back in, a run saves the
same context and makes the same requests, so a re-run with the response cache makes no
call at all. In process, against the fake server with a random latency per request
(seeded differently per run) and a model that repeats itself: tests of different chunks
and expansions of different tests with the same input, so which copy is kept matters.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import promptgen
from promptgen import Options
from promptgen.context import Context
from promptgen.llm import LLM, RetryPolicy, load_settings
from promptgen.options import Evaluation, Generation, Models, Run
from tests.conftest import REPO
from tests.fakellm import FakeLLM
from tests.pipeline_fake import PipelineResponder

SAMPLE = REPO / "samples" / "translate-support-reply.prompty"
JITTER = 0.02  # seconds: enough to shuffle completion order, little added time
# Fields that say when and how fast, not what: they differ between any two runs.
VOLATILE = {"run_id", "started_at", "finished_at", "duration_s", "latency_ms", "usage"}
VOLATILE |= {"calls_done", "calls_planned"}
# Beyond the presets: every stage that keeps a list of its own (groundtruth attempts,
# compiled rules, the review, baseline tests) at one effort.
EVERYTHING = {
    "generation": {"baseline_tests": True, "rate_tests": True},
    "evaluation": {"groundtruth": True, "compile_rules": True, "max_tests_to_run": 12},
}


class Repeating(PipelineResponder):
    """Answers by content (the same request, the same answer) and repeats itself: the
    first case under every rule label has one input shared by every chunk, and every
    expansion of a rule's tests has one input, so duplicates meet across calls."""

    def __init__(self) -> None:
        super().__init__(rules=4)
        self.by_content = True

    def answer(self, name: str, schema: dict[str, Any], text: str, n: int) -> Any:
        if name == "RuleCheckProposal":  # a check per rule: none fits (a judgement call)
            return {"reason": "a matter of judgement", "check": "none", "argument": ""}
        return super().answer(name, schema, text, n)

    def _cases(self, name: str, schema: dict[str, Any], text: str, n: int) -> Any:
        answer = super()._cases(name, schema, text, n)
        if name == "TestCase":
            answer["inputs"] = _same(answer["inputs"], "a harder input")
        elif any(d.startswith("Cases") for d in schema.get("$defs", {})):
            for cases in answer.values():
                cases["1"]["inputs"] = _same(cases["1"]["inputs"], "a shared input")
        return answer


def _same(inputs: dict[str, Any], text: str) -> dict[str, Any]:
    """The free-text inputs (the fake writes "NAME value ...") replaced by `text`; an
    enum's value is kept, so the answer still matches its schema."""
    return {k: f"{k}: {text}" if " value " in str(v) else v for k, v in inputs.items()}


@pytest.fixture
def fake() -> Iterator[FakeLLM]:
    with FakeLLM(responder=Repeating(), jitter=JITTER) as server:
        yield server


def run(fake: FakeLLM, tmp_path: Path, seed: int, cache: str, effort: str, **extra: Any) -> Context:
    """A fresh run (new context) with the response cache in `tmp_path/cache`; the fake
    server's latencies drawn with `seed`; its requests start from none."""
    fake.reset()
    fake.rng = random.Random(seed)
    given = {"api_base": fake.url, "eval": "openai/judge", "cache_dir": str(tmp_path / cache)}
    settings = load_settings(given, env={}, cwd=tmp_path)
    llm = LLM(settings, retry=RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02))
    options = Options(
        effort=effort,
        models=Models(models=["m1", "m2"], api_base=fake.url),
        generation=Generation(**extra.get("generation", {})),
        evaluation=Evaluation(**extra.get("evaluation", {"max_tests_to_run": 12})),
        run=Run(out=tmp_path / f"out-{seed}"),
    )
    prepared = promptgen.prepare(SAMPLE, options)

    async def go() -> Context:
        try:
            return await promptgen.run_async(prepared, llm=llm, save=False)
        finally:
            await llm.aclose()

    return asyncio.run(go())


def stable(value: Any) -> Any:
    """The saved context without what differs between any two runs (times, usage)."""
    if isinstance(value, dict):
        return {k: stable(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [stable(v) for v in value]
    return value


def saved(ctx: Context) -> dict[str, Any]:
    return stable(json.loads(ctx.to_json()))


def bodies(fake: FakeLLM) -> Counter[str]:
    return Counter(json.dumps(body, sort_keys=True) for body in fake.requests)


EFFORTS = [("min", {}), ("low", {}), ("medium", {}), ("high", EVERYTHING)]


@pytest.mark.parametrize(("effort", "extra"), EFFORTS, ids=[e for e, _ in EFFORTS])
def test_a_cached_rerun_makes_no_call(
    effort: str, extra: dict[str, Any], fake: FakeLLM, tmp_path: Path
) -> None:
    first = run(fake, tmp_path, 1, "cache", effort, **extra)
    asked = len(fake.requests)
    again = run(fake, tmp_path, 2, "cache", effort, **extra)  # answers in another order
    assert asked > 15
    assert fake.requests == []  # counted by the server: not one call reached it
    assert saved(again) == saved(first)


@pytest.mark.parametrize(("effort", "extra"), EFFORTS, ids=[e for e, _ in EFFORTS])
def test_completion_order_changes_no_request_and_no_result(
    effort: str, extra: dict[str, Any], fake: FakeLLM, tmp_path: Path
) -> None:
    first = run(fake, tmp_path, 1, "cache-1", effort, **extra)
    one = bodies(fake)
    second = run(fake, tmp_path, 2, "cache-2", effort, **extra)
    assert bodies(fake) == one  # the same requests, each as often
    a, b = saved(first), saved(second)
    for name in ("tests", "test_runs", "metric_results", "groundtruth", "metrics"):
        assert a[name] == b[name], name
    assert a == b
    # The duplicates met: some tests were dropped, and the order is the cells' order.
    assert a["stages"]["tests"]["counts"]["duplicates_dropped"] > 0
    runs = [(r["model"], r["test_id"], r["run_index"]) for r in a["test_runs"]]
    order = {t["id"]: i for i, t in enumerate(a["tests"])}
    assert runs == sorted(runs, key=lambda r: (r[0], order[r[1]], r[2]))
    assert [r[0] for r in runs][:1] == ["m1"] and runs[-1][0] == "m2"
    if effort == "high":
        assert len(a["groundtruth"]) > 0 and len(a["compiled_rules"]) == 4
