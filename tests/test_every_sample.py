"""The whole pipeline (generation, baseline, groundtruth, two models, review) on every
sample at every effort, against an independent server: ../shared/tools/mockllm.py,
answering exactly what the schema sent allows (`--literal 1`) and like a cooperative
model (default). Every run ends as exit 0 would, with every count the options ask for or
a reason recorded for the shortfall. Skips when ../shared is absent."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

import promptgen
from promptgen import Context, Options
from promptgen.config import RunConfig
from promptgen.gate import gate
from promptgen.options import Evaluation, Generation, Models, Run
from promptgen.selection import eval_tests
from promptgen.stages.tests import empty_slots, note_key, planned, target_rules
from tests.conftest import REPO
from tests.mockserver import ROLE_MODEL, mockllm

SAMPLES = sorted(
    p.name
    for p in (REPO / "samples").iterdir()
    if p.suffix in (".prompty", ".md", ".txt", ".yml") and ".metric." not in p.name
    if p.name != "README.md" and not p.name.endswith(".instructions.txt")
)
EFFORTS = ("min", "low", "medium", "high")


@pytest.fixture(scope="module", params=["literal", "cooperative"])
def server(request: pytest.FixtureRequest) -> Iterator[str]:
    with mockllm("--literal", "1" if request.param == "literal" else "0") as url:
        yield url


def options(effort: str, url: str, out: Path) -> Options:
    return Options(
        effort=effort,
        generation=Generation(baseline_tests=True, rate_tests=True, filter_tests=5),
        # The mock's safety verdicts are arbitrary enum picks: keep the flagged tests so
        # every count below stays what the options ask for.
        evaluation=Evaluation(groundtruth=True, keep_unsafe=True),
        models=Models(
            models=["mock-small", "mock-large"],
            api_base=url,
            **dict.fromkeys(("rules_model", "eval_model", "baseline_model"), ROLE_MODEL),
            groundtruth_model=ROLE_MODEL,
        ),
        run=Run(out=out, cache=False),
    )


def check_counts(ctx: Context, cfg: RunConfig) -> None:
    """Every count is what the options ask for, or the shortfall has a recorded reason."""
    gen, ev = cfg.gen, cfg.ev
    assert 1 <= len(ctx.rules) <= (gen.max_rules or len(ctx.rules))
    assert sorted(r.inverse_of for r in ctx.inverse_rules) == sorted(r.id for r in ctx.rules)
    # A test for every planned slot (each behaviour, testsPerRule per rule and inverse) in
    # every scenario, or a note saying why not.
    notes = ctx.stage("tests").notes
    scenarios = [s.name for s in ctx.prompt.scenarios] or [None]
    scenario_list = list(ctx.prompt.scenarios) or [None]
    for scenario in ctx.prompt.scenarios or [None]:
        for slot in empty_slots(ctx, cfg, scenario):
            assert note_key(slot, scenario) in notes, slot.key
    assert len(notes) == ctx.stage("tests").counts.get("slots_empty", 0)
    have = Counter((t.rule_id, t.scenario) for t in ctx.tests if t.origin == "generated")
    slots = planned(ctx, cfg)
    for rule in target_rules(ctx, cfg):  # no rule is left without a test, or says why
        said = {note_key(s, c) for s in slots if s.rule.id == rule.id for c in scenario_list}
        assert any(have[rule.id, s] for s in scenarios) or said & set(notes), rule.id
    # Baseline tests per scenario; expansion rounds for every generated test.
    assert {t.scenario for t in ctx.tests if t.origin == "baseline"} == set(scenarios)
    generated = [t for t in ctx.tests if t.origin == "generated"]
    assert len(ctx.stage("expand").done) == len(generated) * gen.test_expansions
    if gen.validity:
        assert all(t.valid is not None for t in ctx.tests)
    if cfg.safety:  # every test a model wrote was screened; the author's samples are not
        assert all((t.safety is None) == (t.origin == "sample") for t in ctx.tests)
    # Groundtruth for every evaluated test; a run and a compliance verdict for every cell.
    tests = eval_tests(ctx, cfg)
    assert tests
    assert all(t.groundtruth is not None or t.groundtruth_status for t in tests)
    cells = Counter((r.test_id, r.model) for r in ctx.test_runs)
    assert cells == {(t.id, m): ev.runs_per_test for t in tests for m in cfg.models}
    for run in ctx.test_runs:
        assert run.error is None and "compliance" in run.metrics, run
    # The review rated every test.
    assert ctx.review is not None and not ctx.stage("review").counts.get("not_rated")


@pytest.mark.parametrize("effort", EFFORTS)
@pytest.mark.parametrize("sample", SAMPLES)
def test_every_sample_every_effort(server: str, sample: str, effort: str, tmp_path: Path) -> None:
    prepared = promptgen.prepare(REPO / "samples" / sample, options(effort, server, tmp_path))
    ctx = promptgen.run(prepared)
    assert {r.status for r in ctx.stages.values()} <= {"done", "skipped"}, ctx.stages
    gate(ctx, prepared.cfg)  # raises unless the command would exit 0
    check_counts(ctx, prepared.cfg)
