"""`promptgen mutate`: would the saved tests notice if someone broke this prompt?

    prepared = prepare("my.prompty", Options(models=Models(models=["m"])))
    ctx = await mutate_async(prepared, MutationSettings(max_mutants=10))
    ctx.mutation.score.percent

The main pipeline runs first where the context has work left (tests, the original's
runs and scores); then the stages of promptgen.mutation run like any stage: their work
is declared by `todo()`, the context is saved after every unit, and a killed run
resumes where it stopped (docs/mutation.md).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path

from promptgen.api import CONTEXT_FILE, Prepared, run_async
from promptgen.context import Context, save_context
from promptgen.errors import BadInputError, PromptgenError
from promptgen.llm import LLM
from promptgen.mutation import mutant_runs, mutants
from promptgen.mutation.build import choose, deterministic_edits, distinct, mark_equivalent
from promptgen.mutation.score import judge
from promptgen.pipeline import finish_record, plan, run_units, unfinished
from promptgen.progress import PlainReporter, Reporter
from promptgen.results import MutationResults, UsageTotals
from promptgen.saving import Pace
from promptgen.selection import eval_tests
from promptgen.stage import StageSpec

STAGES = (StageSpec.of(mutants), StageSpec.of(mutant_runs))


@dataclass(frozen=True)
class MutationSettings:
    max_mutants: int = 20  # --mutants: non-equivalent mutants run at most
    llm_mutants: int = 4  # --llm-mutants: edits asked of the rules model (0: none)


def check(prepared: Prepared) -> None:
    """What mutation testing needs, checked before any call."""
    if not prepared.cfg.models:
        raise BadInputError(
            "mutate needs the models under test", hint="give --models, as for the main run"
        )
    if not prepared.cfg.evaluating:
        raise BadInputError("mutate needs evaluation", hint="drop --no-evals")
    if prepared.ctx.prompt.variants:
        raise BadInputError(
            "mutate cannot test a multi-run prompt (LVE multi_run_prompt) yet",
            file=prepared.ctx.prompt.source,
        )


def start(ctx: Context, settings: MutationSettings, models: tuple[str, ...]) -> list[str]:
    """Set up (or keep) the mutation state; other settings than the saved ones start
    the mutants over. Returns notes for the user."""
    state = ctx.mutation
    same = state is not None and (state.max_mutants, state.llm_mutants) == (
        settings.max_mutants,
        settings.llm_mutants,
    )
    if state is not None and same:
        state.models = list(models)
        return (
            [f"resuming the mutation run ({len(state.mutants)} mutants)"] if state.proposed else []
        )
    notes = ["new --mutants/--llm-mutants: the mutants are made anew"] if state else []
    ctx.mutation = MutationResults(
        models=list(models), max_mutants=settings.max_mutants, llm_mutants=settings.llm_mutants
    )
    for name in ("mutants", "mutant_runs"):
        ctx.stages.pop(name, None)
    return notes


def dry_plan(prepared: Prepared, settings: MutationSettings) -> dict[str, int]:
    """Calls still to make: the main run's stages, the proposal, and the mutants' cells
    (exact once the mutants exist; before, counted from the deterministic mutants and
    the proposals asked for, assumed all usable)."""
    ctx, cfg = prepared.ctx, prepared.cfg
    calls = plan(ctx, cfg)
    probe = ctx.model_copy(deep=True)
    start(probe, settings, cfg.models)
    state = probe.mutation
    assert state is not None
    if state.proposed:
        calls["mutant_runs"] = sum(i.calls for i in mutant_runs.todo(probe, cfg))
        return {k: v for k, v in calls.items() if v}
    calls["mutants"] = 1 if settings.llm_mutants else 0
    tests = eval_tests(probe, cfg)
    found = distinct(probe.prompt, deterministic_edits(probe.prompt), Counter())
    mark_equivalent(probe.prompt, found, tests)
    live = len([m for m in choose(found, settings.max_mutants) if not m.equivalent])
    count = min(settings.max_mutants, live + settings.llm_mutants)
    if tests and not calls.get("tests"):
        per_mutant = (
            sum(1 + mutant_runs.judge_calls(t, m, cfg) for t in tests for m in cfg.models)
            * cfg.ev.runs_per_test
        )
    else:  # the tests are still to be made: as many cells as the main run plans
        judged = sum(m.judged and not m.needs_groundtruth for m in cfg.output_metrics)
        per_mutant = calls.get("runs", 0) * (1 + judged * len(cfg.judges))
    calls["mutant_runs"] = count * per_mutant
    return {k: v for k, v in calls.items() if v}


async def mutate_async(
    prepared: Prepared,
    settings: MutationSettings,
    *,
    reporter: Reporter | None = None,
    main_reporter: Reporter | None = None,
    llm: LLM | None = None,
) -> tuple[Context, list[str]]:
    """Run what is left of the main run, then the mutation stages; the context is saved
    to OUT/context.json after every unit. Returns the context and notes."""
    check(prepared)
    ctx, cfg = prepared.ctx, prepared.cfg
    gateway = llm or LLM(cfg.settings)
    path = prepared.out / CONTEXT_FILE
    reporter = reporter or PlainReporter(quiet=True, warnings=False)
    base = ctx.usage.model_copy(deep=True)  # the gateway's totals add to it
    try:
        if unfinished(ctx, cfg):
            ctx = await run_async(prepared, reporter=main_reporter, llm=gateway)
            left = unfinished(ctx, cfg)
            if left:
                raise PromptgenError(
                    f"the main run did not finish ({', '.join(left)}), so there is no suite "
                    "to run on the mutants",
                    hint="re-run the same command to resume it",
                )
        notes = start(ctx, settings, cfg.models)
        saver = _Saver(ctx, gateway, path, base)
        # The mutants are not made yet: the plan counts the cells they will have (on a
        # copy made from the data alone: the live context holds the saver's lock).
        fresh = Context.model_validate(ctx.model_dump())
        planned = dry_plan(replace(prepared, ctx=fresh), settings)
        reporter.start({s.name: planned.get(s.name, 0) for s in STAGES})
        try:
            for stage in STAGES:
                record = ctx.stage(stage.name)
                items = stage.todo(ctx, cfg)
                rest = await run_units(stage, stage.name, ctx, cfg, gateway, items, saver.tick)
                finish_record(record, rest)
                saver.save()
                reporter.update(gateway.usage.totals.by_stage)
                reporter.stage_finished(record)
                if rest:
                    break
        finally:
            scorers = {m.name for m in cfg.output_metrics if m.info.scorer}
            judge(ctx, eval_tests(ctx, cfg), cfg.ev.runs_per_test, scorers)
            saver.save()
            reporter.close()
        return ctx, notes
    finally:
        if llm is None:
            await gateway.aclose()


class _Saver:
    """Saves the context after a unit (as often as the save's cost allows:
    promptgen.saving.Pace; answers finished since are in the response cache), with the
    usage of these stages."""

    def __init__(self, ctx: Context, llm: LLM, path: Path, base: UsageTotals) -> None:
        self.ctx, self.llm, self.path, self.base = ctx, llm, path, base
        self.stage_base = {n: r.usage.model_copy() for n, r in ctx.stages.items()}
        self.pace = Pace()

    def tick(self) -> None:
        if self.pace.due():
            self.save()

    def save(self) -> None:
        started = self.pace.clock()
        totals = self.llm.usage.totals
        self.ctx.usage = self.base + totals
        for name in ("mutants", "mutant_runs"):
            current = totals.by_stage.get(name)
            if current is not None and name in self.ctx.stages:
                base = self.stage_base.get(name)
                record = self.ctx.stages[name]
                record.usage = base + current if base else current.model_copy()
                record.calls_done = record.usage.calls
        save_context(self.ctx, self.path)
        self.pace.saved(started)
