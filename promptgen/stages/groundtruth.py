"""Groundtruth: a groundtruth model answers each test; eval models score the answer.

One rule (docs/metrics.md): an answer is accepted when the average of its scores
reaches `groundtruthThreshold`; of the candidates, the best that passes is kept
(highest average, ties to the lowest attempt). A test gets 1 + `groundtruthRetries`
candidate answers (attempt k is variant k: a distinct call, never another's cached
answer), asked at once (one request with `n` where the backend takes it) and judged
concurrently, so a test costs two dependent calls, not up to six. The embedded local
model answers one call at a time and would only pay for candidates it never needs:
there, a candidate is asked only when the ones before it failed the threshold. A test
whose candidates all fall short keeps the best-scoring one, marked `invalid`, and gets
no accuracy score. PromptPex retried below 80 but rejected below 50, and its retries
could come back from its own cache.

An answer that is empty or cut off at the token limit is a failed call, not an answer:
it is never scored or accepted. When no other candidate is accepted the test stays
unsettled, and a re-run asks only the candidates that are missing (the cache serves
the rest). `ctx.groundtruth` is kept in the tests' order, then by attempt.

A test sample with an expected output needs no groundtruth model: the author's output is
its reference (status `author`, no call); the model answers only the other tests.
"""

from __future__ import annotations

import asyncio
from statistics import mean

from promptgen.config import RunConfig
from promptgen.context import Context
from promptgen.evaluation import Metric, Verdict, make_case
from promptgen.llm import backend_type
from promptgen.llm.backend import DEFAULT_CONCURRENCY
from promptgen.llm.choices import answer_requests
from promptgen.order import sort_groundtruth
from promptgen.prompting.invoke import call_settings
from promptgen.results import GroundtruthAttempt, Test, TestRun
from promptgen.selection import author_reference, eval_tests
from promptgen.stage import TEST_SET, Projection, Scope, WorkItem
from promptgen.stages._candidates import answer_candidates
from promptgen.stages._steps import calls_per_walk
from promptgen.stages.runs import run_test

requires = ("rules", *TEST_SET)
phase = "evaluation"


def enabled(cfg: RunConfig) -> bool:
    return cfg.with_groundtruth


def rounds(cfg: RunConfig) -> int:
    """The candidate answers, then their scores."""
    return 2


def candidates(cfg: RunConfig) -> int:
    return 1 + cfg.ev.groundtruth_retries


def speculative(cfg: RunConfig) -> bool:
    """Whether the candidates are asked at once: not where the groundtruth model
    computes on this machine's cores (the embedded model: a candidate asked in case it
    is needed costs its whole compute), nor where it answers one call at a time
    (--concurrency 1)."""
    api_base = cfg.settings.api_base if cfg.settings else None
    policy = backend_type(cfg.groundtruth_model, api_base).policy
    if policy.computes_here:
        return False
    fixed = policy.concurrency
    settings = cfg.settings.concurrency if cfg.settings else None
    at_a_time = fixed if fixed is not None else settings or DEFAULT_CONCURRENCY
    return at_a_time > 1


def _scored(ctx: Context) -> dict[str, set[int]]:
    """The attempts already scored, per test (read once per plan, not once per test)."""
    found: dict[str, set[int]] = {}
    for a in ctx.groundtruth:
        if a.average is not None:
            found.setdefault(a.test_id, set()).add(a.attempt)
    return found


def _missing(cfg: RunConfig, scored: set[int]) -> list[int]:
    """The attempts of a test still to answer or score (all of them when speculative)."""
    if not speculative(cfg):
        return [_next(scored)]  # later ones only if this one falls short
    return [k for k in range(candidates(cfg)) if k not in scored]


def _next(scored: set[int]) -> int:
    return next(k for k in range(len(scored) + 1) if k not in scored)


def _calls(ctx: Context, cfg: RunConfig, test: Test, scored: set[int]) -> int:
    """Model calls the test takes as planned: answer requests as really made (one with
    `n` where the backend takes it; cached answers cost nothing but are not known here),
    then every candidate scored by every judge on every groundtruth metric."""
    if author_reference(ctx.prompt, test) is not None:
        return 0
    missing = _missing(cfg, scored)
    api_base = cfg.settings.api_base if cfg.settings else None
    kind = backend_type(cfg.groundtruth_model, api_base)
    per = calls_per_walk(ctx.prompt)
    name = kind.model_name(cfg.groundtruth_model)
    answers = per * (answer_requests(kind, name, len(missing)) if per == 1 else len(missing))
    judged = len(cfg.groundtruth_judges) * len(cfg.groundtruth_metrics)
    return answers + len(missing) * judged


def todo(ctx: Context, cfg: RunConfig) -> list[WorkItem[Test]]:
    tests = [t for t in eval_tests(ctx, cfg) if t.groundtruth_status is None]
    scored = _scored(ctx)
    return [WorkItem(t.id, t, _calls(ctx, cfg, t, scored.get(t.id, set()))) for t in tests]


def estimate(ctx: Context, cfg: RunConfig, projection: Projection) -> int:
    if projection.test_set_known:
        return sum(i.calls for i in todo(ctx, cfg))
    probe = Test(id="probe", inputs={})
    return projection.eval_tests_of(ctx, cfg) * _calls(ctx, cfg, probe, set())


async def run(item: WorkItem[Test], scope: Scope) -> None:
    ctx, cfg = scope.ctx, scope.cfg
    test: Test = item.data
    given = author_reference(ctx.prompt, test)
    if given is not None:
        test.groundtruth, test.groundtruth_model, test.groundtruth_score = given, None, None
        test.groundtruth_status = "author"
        scope.checkpoint()
        return
    if speculative(cfg):
        await _at_once(scope, test)
    else:
        await _one_by_one(scope, test)


async def _at_once(scope: Scope, test: Test) -> None:
    """Every missing candidate asked at once, the answers scored concurrently; the test
    settles unless no candidate passed while some failed (a re-run asks those)."""
    ctx, cfg = scope.ctx, scope.cfg
    missing = _missing(cfg, _scored(ctx).get(test.id, set()))
    settings = call_settings(ctx.prompt, cfg.ev)
    model = cfg.groundtruth_model
    if missing:
        answers = await answer_candidates(ctx.prompt, scope.llm, settings, test, model, missing)
        records = [_record(ctx, test, model, k, a) for k, a in zip(missing, answers, strict=True)]
        _sort(ctx)
        scope.checkpoint()
        await asyncio.gather(
            *(_score(scope, test, r, r.output or "") for r in records if r.error is None)
        )
    mine = [a for a in ctx.groundtruth if a.test_id == test.id]
    best = _best(mine)
    # An attempt beyond today's candidates (retries lowered since) is never asked again.
    failed = [a for a in mine if a.average is None and a.attempt < candidates(cfg)]
    if best is not None and (best.accepted or not failed):
        _settle(test, best)
    elif failed:
        scope.fail(failed[0].error or "no eval model could score the answer")
    scope.checkpoint()


async def _one_by_one(scope: Scope, test: Test) -> None:
    """A candidate at a time, the next only when the best so far falls short."""
    ctx, cfg = scope.ctx, scope.cfg
    settings = call_settings(ctx.prompt, cfg.ev)
    model = cfg.groundtruth_model
    while True:
        scored = [a for a in ctx.groundtruth if a.test_id == test.id and a.average is not None]
        best = _best(scored)
        if best is not None and (best.accepted or len(scored) >= candidates(cfg)):
            _settle(test, best)
            return
        attempt = _next({a.attempt for a in scored})  # variant = attempt: a new call
        answer = await run_test(
            ctx.prompt, scope.llm, settings, test, model, attempt, "groundtruth"
        )
        record = _record(ctx, test, model, attempt, answer)
        _sort(ctx)
        if record.error is not None:  # failed, empty or cut off
            scope.fail(record.error)
            return  # the test stays unsettled; a re-run asks this attempt again
        await _score(scope, test, record, record.output or "")
        if record.error is not None:
            scope.fail(record.error)
            return
        scope.checkpoint()


def _record(
    ctx: Context, test: Test, model: str, attempt: int, answer: TestRun
) -> GroundtruthAttempt:
    """The attempt's record, replacing an earlier one of the same attempt."""
    record = GroundtruthAttempt(test_id=test.id, attempt=attempt, model=model, output=answer.output)
    if not answer.ok or answer.output is None:
        record.error = answer.error or "empty answer"
    ctx.groundtruth = [
        a for a in ctx.groundtruth if not (a.test_id == test.id and a.attempt == attempt)
    ]
    ctx.groundtruth.append(record)
    return record


def _sort(ctx: Context) -> None:
    """The tests' order, then attempt order, whichever answer came back first (stable
    contexts, docs/runs.md)."""
    sort_groundtruth(ctx)


def _best(attempts: list[GroundtruthAttempt]) -> GroundtruthAttempt | None:
    """The highest average; a tie goes to the lowest attempt."""
    scored = [a for a in attempts if a.average is not None]
    return min(scored, key=lambda a: (-(a.average or 0.0), a.attempt), default=None)


async def _score(scope: Scope, test: Test, record: GroundtruthAttempt, output: str) -> None:
    """Every groundtruth metric on every groundtruth judge; scores averaged per judge."""
    cfg = scope.cfg
    pairs = [(who, m) for who in cfg.groundtruth_judges for m in cfg.groundtruth_metrics]

    async def one(who: str, metric: Metric) -> Verdict:
        case = make_case(scope.ctx, test, output, judge=who, llm=scope.llm, stage="groundtruth")
        return await metric.evaluate(case)

    verdicts = await asyncio.gather(*(one(who, m) for who, m in pairs))
    for who in cfg.groundtruth_judges:
        mine = [v for (w, _), v in zip(pairs, verdicts, strict=True) if w == who]
        points = [v.score for v in mine if v.score is not None]
        if points:
            record.scores[who] = mean(points)
            record.reasons[who] = next((v.reason for v in mine if v.reason), "")
        elif mine[0].error:
            record.reasons[who] = mine[0].error
    if not record.scores:
        record.error = "no eval model could score the answer"
        return
    record.average = mean(record.scores.values())
    record.accepted = record.average >= cfg.ev.groundtruth_threshold


def _settle(test: Test, best: GroundtruthAttempt) -> None:
    test.groundtruth = best.output
    test.groundtruth_model = best.model
    test.groundtruth_score = best.average
    test.groundtruth_status = "ok" if best.accepted else "invalid"
