"""The pipeline derives everything from the stages' declarations: order, plan,
critical path, completion. In process, against the fake server."""

from __future__ import annotations

from pathlib import Path

import pytest

import promptgen
from promptgen import Options
from promptgen.config import RunConfig, build_config, resolve_options
from promptgen.context import Context
from promptgen.options import Evaluation, Generation, Models, Run
from promptgen.pipeline import STAGES, critical_path, plan, unfinished, waits_for
from tests.conftest import REPO
from tests.fakellm import FakeLLM
from tests.pipeline_fake import PipelineResponder
from tests.stagekit import context, make_llm

SAMPLE = REPO / "samples" / "translate-support-reply.prompty"


def test_every_stage_comes_after_what_it_waits_for() -> None:
    order = list(STAGES)
    for name, stage in STAGES.items():
        for before in waits_for(stage):
            assert order.index(before) < order.index(name), (before, name)
    assert order[:4] == ["behaviours", "input_spec", "intent", "rules"]
    assert order[-2:] == ["metrics", "compile_rules"]  # compiled checks need verdicts
    assert set(order) == {p.stem for p in (REPO / "promptgen" / "stages").glob("[!_]*.py")}


@pytest.mark.parametrize("effort", ["min", "low", "medium"])
def test_the_plan_is_the_calls_made(effort: str, tmp_path: Path) -> None:
    """With as many rules as the plan assumes (one per instruction sentence: 8 here),
    every generation stage makes the calls planned; the evaluation makes at most as many
    (invalid tests are left out)."""
    with FakeLLM(responder=PipelineResponder(rules=8)) as fake:
        options = Options(
            effort=effort,
            models=Models(models=["m1"], api_base=fake.url),
            run=Run(out=tmp_path / "o", cache=False),
        )
        prepared = promptgen.prepare(SAMPLE, options)
        planned = plan(prepared.ctx, prepared.cfg)
        ctx = promptgen.run(prepared, llm=make_llm(fake, tmp_path), save=False)
    made = {name: usage.calls for name, usage in ctx.usage.by_stage.items()}
    generation = [n for n, s in STAGES.items() if s.phase == "generation" and n in planned]
    # Judged in batches of tests, projected before the tests (and a model's behaviours)
    # exist: within one batch. Every other stage exactly.
    judged = [n for n in generation if n in ("screen", "validity")]
    exact = [n for n in generation if n not in judged]
    assert {n: made.get(n, 0) for n in exact} == {n: planned[n] for n in exact}
    assert "screen" in judged
    for name in judged:
        assert abs(made.get(name, 0) - planned[name]) <= 1, (name, made.get(name), planned[name])
    assert "groundedness" in generation or effort == "min"
    for name in ("runs", "metrics"):
        assert 0 < made[name] <= planned[name], name
    assert unfinished(ctx, prepared.cfg) == []
    # Resumed with nothing left: the plan is empty.
    assert plan(ctx, prepared.cfg) == {}


def _cfg(effort: str, **evaluation: object) -> RunConfig:
    """Options resolved as `prepare` does: the effort preset applies."""
    models = Models(models=["m"]) if evaluation else Models()
    given = Options(effort=effort, models=models, evaluation=Evaluation(**evaluation))
    options, sources = resolve_options(given)
    return build_config(context().prompt, options, sources)


def test_critical_path_from_the_declarations() -> None:
    # intent|input_spec|rules -> inverse_rules -> tests [-> expand] -> screen|validity
    # (the safety screen is on at every effort; validity from low); the tests of every
    # slot in one call per chunk, whatever testGenerations
    assert [critical_path(_cfg(e)) for e in ("min", "low", "medium", "high")] == [4, 4, 5, 5]
    options, sources = resolve_options({"effort": "min", "safety": False})  # --no-safety
    assert critical_path(build_config(context().prompt, options, sources)) == 3
    # ... -> runs -> metrics; with groundtruth: answer -> score -> metrics
    assert critical_path(_cfg("low", evals=True)) == 6
    assert critical_path(_cfg("low", groundtruth=True)) == 7


def test_unfinished_is_read_off_the_context_not_a_saved_status(tmp_path: Path) -> None:
    ctx = context(rules=2, tests=0)
    cfg = _cfg("min")
    for name in STAGES:
        ctx.stage(name).status = "done"  # a stale record says everything is done ...
    # ... but no behaviour was listed, no test exists, and the prompt has no safety verdict
    assert unfinished(ctx, cfg, "generation") == ["behaviours", "safety", "tests"]
    assert isinstance(ctx, Context)


def test_a_new_option_needs_no_other_declaration() -> None:
    """Flags, frontmatter keys and the saved form all come from Options."""
    from promptgen.formats.frontmatter import RUN_OPTION_KEYS
    from promptgen.options import OPTION_FIELDS

    keys = [f.opt.key for f in OPTION_FIELDS if f.opt.key]
    assert list(RUN_OPTION_KEYS) == keys
    assert "testsPerRule" in keys and "runsPerTest" in keys
    options = Options(generation=Generation(tests_per_rule=4))
    assert options["tests_per_rule"] == 4
