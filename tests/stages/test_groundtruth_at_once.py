"""Speculative groundtruth: a test's 1 + groundtruthRetries candidates are asked at once
(one request with `n`, or one call each where the server ignores `n`), judged
concurrently, and the best that passes is kept; a re-run asks only what is missing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from promptgen.context import Context
from promptgen.gate import Failures, evaluation_failures
from promptgen.llm import LLM, RetryPolicy, load_settings
from promptgen.stages import groundtruth
from tests.conftest import OPEN_GATEWAYS
from tests.fakellm import FakeLLM, Reply, json_reply
from tests.stagekit import EVAL, config, context, schema_names, stage

MODELS = {"models": ["openai/model-a"]}
THREE = {"groundtruth": True, "groundtruth_retries": 2}


class Candidates:
    """The groundtruth model answers `candidate k` (all n, or one per request when it
    ignores `n`); the judge scores each candidate as `scores` says."""

    def __init__(self, scores: list[int], honour_n: bool = True) -> None:
        self.scores = scores
        self.honour_n = honour_n
        self.empty: set[int] = set()  # candidates answered empty (a failed call)

    def __call__(self, body: dict[str, Any]) -> Reply:
        text = "\n".join(str(m.get("content", "")) for m in body["messages"])
        if body.get("response_format"):  # the judge
            k = next(k for k in range(len(self.scores)) if f"candidate {k}" in text)
            return json_reply({"explanation": f"judged {k}", "score": self.scores[k]})
        n = int(body.get("n") or 1) if self.honour_n else 1
        first = int(body.get("seed") or 0)  # variant k is sent with seed k
        choices = ["" if k in self.empty else f"candidate {k}" for k in range(first, first + n)]
        return Reply(choices=choices, prompt_tokens=40, completion_tokens=9 * n)


def gateway(fake: FakeLLM, tmp_path: Path, cache: bool = False) -> LLM:
    settings = load_settings(
        {"api_base": fake.url, "eval": EVAL, "cache": cache, "cache_dir": str(tmp_path / "c")},
        env={},
        cwd=tmp_path,
    )
    llm = LLM(settings, retry=RetryPolicy(max_attempts=1))
    OPEN_GATEWAYS.append(llm)
    return llm


def run_stage(fake: FakeLLM, llm: LLM, ctx: Context, evaluation: dict[str, Any]) -> None:
    stage("groundtruth", ctx, config(ctx, llm, evaluation=evaluation, models=MODELS), llm)


def attempts(ctx: Context) -> list[tuple[int, str | None, float | None, bool]]:
    return [(a.attempt, a.output, a.average, a.accepted) for a in ctx.groundtruth]


def answers_before_judges(fake: FakeLLM) -> bool:
    names = schema_names(fake)
    return names.index("GroundtruthScore") == names.count("text")


def test_only_the_second_passes_so_it_is_kept(tmp_path: Path) -> None:
    with FakeLLM(responder=Candidates([60, 85, 70])) as fake:
        llm = gateway(fake, tmp_path)
        ctx = context(rules=1, tests=1)
        cfg = config(ctx, llm, evaluation=THREE, models=MODELS)
        assert [i.calls for i in groundtruth.todo(ctx, cfg)] == [1 + 3]  # one request, 3 scores
        run_stage(fake, llm, ctx, THREE)
        # One request with n=3 (as variant 0 would be sent), then the three judgements.
        assert schema_names(fake) == ["text"] + ["GroundtruthScore"] * 3
        assert fake.requests[0]["n"] == 3 and "seed" not in fake.requests[0]
    assert attempts(ctx) == [
        (0, "candidate 0", 60.0, False),
        (1, "candidate 1", 85.0, True),
        (2, "candidate 2", 70.0, False),
    ]
    (test,) = ctx.tests
    assert (test.groundtruth, test.groundtruth_score, test.groundtruth_status) == (
        "candidate 1",
        85.0,
        "ok",
    )
    # Tokens: the request's, counted once (40 prompt, 27 completion for its 3 choices),
    # and shared among the candidates so that they add up to it.
    used = llm.usage.totals.by_model["openai/default"]
    assert (used.calls, used.prompt_tokens, used.completion_tokens) == (1, 40, 27)


def test_none_passes_the_best_is_kept_invalid_ties_to_the_lowest(tmp_path: Path) -> None:
    with FakeLLM(responder=Candidates([50, 72, 72])) as fake:
        llm = gateway(fake, tmp_path)
        ctx = context(rules=1, tests=1)
        run_stage(fake, llm, ctx, THREE)
        assert answers_before_judges(fake)
    (test,) = ctx.tests
    assert (test.groundtruth, test.groundtruth_score, test.groundtruth_status) == (
        "candidate 1",
        72.0,
        "invalid",
    )
    assert [a.attempt for a in ctx.groundtruth] == [0, 1, 2]
    assert ctx.stage("groundtruth").status == "done"


def test_a_server_that_ignores_n_gets_the_rest_as_separate_calls(tmp_path: Path) -> None:
    with FakeLLM(responder=Candidates([60, 70, 90], honour_n=False)) as fake:
        llm = gateway(fake, tmp_path)
        ctx = context(rules=1, tests=1)
        run_stage(fake, llm, ctx, THREE)
        answers = [b for b in fake.requests if not b.get("response_format")]
        # The request with n=3 came back with one choice: variants 1 and 2 asked alone.
        assert (answers[0].get("n"), answers[0].get("seed")) == (3, None)
        assert sorted(b.get("seed") or 0 for b in answers[1:]) == [1, 2]
        assert all("n" not in b for b in answers[1:])
        assert answers_before_judges(fake)
    assert attempts(ctx) == [
        (0, "candidate 0", 60.0, False),
        (1, "candidate 1", 70.0, False),
        (2, "candidate 2", 90.0, True),
    ]
    assert ctx.tests[0].groundtruth == "candidate 2"


def test_a_failed_candidate_and_none_accepted_is_asked_again_alone(tmp_path: Path) -> None:
    responder = Candidates([60, 70, 95])
    responder.empty = {2}
    with FakeLLM(responder=responder) as fake:
        llm = gateway(fake, tmp_path)
        ctx = context(rules=1, tests=1)
        run_stage(fake, llm, ctx, THREE)
        # The request with an empty choice is asked again once (this server repeats it).
        # Two judged; the empty one is recorded, never judged; the test stays unsettled.
        assert schema_names(fake) == ["text"] * 2 + ["GroundtruthScore"] * 2
        assert fake.requests[0] == fake.requests[1]
        assert [(a.attempt, a.error) for a in ctx.groundtruth] == [
            (0, None),
            (1, None),
            (2, "openai/default: empty answer"),
        ]
        (test,) = ctx.tests
        assert test.groundtruth_status is None
        record = ctx.stage("groundtruth")
        assert record.failures == {test.id: "openai/default: empty answer"}
        cfg = config(ctx, llm, evaluation=THREE, models=MODELS)
        assert [i.calls for i in groundtruth.todo(ctx, cfg)] == [1 + 1]

        responder.empty = set()
        fake.reset()
        run_stage(fake, llm, ctx, THREE)
        # Only candidate 2: one call without n (variant 2: seed 2), then its judgement.
        assert schema_names(fake) == ["text", "GroundtruthScore"]
        assert "n" not in fake.requests[0] and fake.requests[0]["seed"] == 2
    assert attempts(ctx)[2] == (2, "candidate 2", 95.0, True)
    assert (test.groundtruth, test.groundtruth_status) == ("candidate 2", "ok")
    assert record.failures == {} and record.status == "done"


def test_an_accepted_candidate_settles_the_test_despite_a_failed_one(tmp_path: Path) -> None:
    responder = Candidates([90, 60, 60])
    responder.empty = {1}
    with FakeLLM(responder=responder) as fake:
        llm = gateway(fake, tmp_path)
        ctx = context(rules=1, tests=1)
        run_stage(fake, llm, ctx, THREE)
    (test,) = ctx.tests
    assert (test.groundtruth, test.groundtruth_status) == ("candidate 0", "ok")
    assert ctx.groundtruth[1].error == "openai/default: empty answer"
    assert ctx.stage("groundtruth").failures == {}
    # Nothing is left to retry, so the failed candidate fails no run: exit 0, not 3.
    cfg = config(ctx, llm, evaluation=THREE, models=MODELS)
    assert groundtruth.todo(ctx, cfg) == []
    assert evaluation_failures(ctx, cfg) == Failures(calls=3, failed=0)


def test_a_failed_candidate_of_an_unsettled_test_still_fails_the_run(tmp_path: Path) -> None:
    responder = Candidates([60, 70, 95])
    responder.empty = {2}
    with FakeLLM(responder=responder) as fake:
        llm = gateway(fake, tmp_path)
        ctx = context(rules=1, tests=1)
        run_stage(fake, llm, ctx, THREE)
    cfg = config(ctx, llm, evaluation=THREE, models=MODELS)
    assert evaluation_failures(ctx, cfg).said(0.0).one_line() == (
        "1 of 3 evaluation calls failed (33.3% > 0.0% allowed by --fail-on-error), "
        "e.g. openai/default: empty answer (re-run the same command to retry only those)"
    )


def test_a_rerun_with_the_cache_asks_nothing(tmp_path: Path) -> None:
    with FakeLLM(responder=Candidates([60, 85, 70])) as fake:
        llm = gateway(fake, tmp_path, cache=True)
        first = context(rules=1, tests=2)
        run_stage(fake, llm, first, THREE)
        assert schema_names(fake).count("text") == 2  # one request per test
        fake.reset()
        again = context(rules=1, tests=2)
        run_stage(fake, llm, again, THREE)
        assert fake.requests == []
    assert (
        again.model_dump(mode="json")["groundtruth"] == first.model_dump(mode="json")["groundtruth"]
    )
    assert [t.groundtruth for t in again.tests] == ["candidate 1", "candidate 1"]
    # Each candidate of the request is its own cache entry: variant k as asked alone.
    hits = llm.usage.totals.by_stage["groundtruth"]
    assert hits.cache_hits == 2 * 3 * 2  # answers and judgements of two tests


def test_candidates_are_kept_in_attempt_order_per_test(tmp_path: Path) -> None:
    with FakeLLM(responder=Candidates([10, 20, 30], honour_n=False), latency=0.01) as fake:
        llm = gateway(fake, tmp_path)
        ctx = context(rules=2, tests=4)
        run_stage(fake, llm, ctx, THREE)
    position = {t.id: i for i, t in enumerate(ctx.tests)}
    keys = [(position[a.test_id], a.attempt) for a in ctx.groundtruth]
    assert keys == sorted(keys) and len(keys) == 12  # the tests' order, then attempts
    assert [t.groundtruth_status for t in ctx.tests] == ["invalid"] * 4
    assert {t.groundtruth for t in ctx.tests} == {"candidate 2"}


def test_the_embedded_model_answers_candidates_one_after_another(tmp_path: Path) -> None:
    """The embedded model computes on this machine's cores: a candidate asked ahead
    would cost its whole compute, so candidates are asked one after another."""
    with FakeLLM() as fake:
        llm = gateway(fake, tmp_path)
        ctx = context(rules=1, tests=1)
        local = {**MODELS, "groundtruth_model": "local/qwen2.5-coder-0.5b"}
        cfg = config(ctx, llm, evaluation=THREE, models=local)
        assert not groundtruth.speculative(cfg)
        assert [i.calls for i in groundtruth.todo(ctx, cfg)] == [1 + 1]  # the first attempt
        remote = config(ctx, llm, evaluation=THREE, models=MODELS)
        assert groundtruth.speculative(remote)
        assert [i.calls for i in groundtruth.todo(ctx, remote)] == [1 + 3]
