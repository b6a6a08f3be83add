"""Runs the stages of one context: order, completion, plans, resume, checkpoints.

Everything here is derived from what each stage module declares (`promptgen.stage`):
the order from `requires`/`after`; a stage is finished when its `todo` is empty (never
from a status saved earlier, so a resumed or re-evaluated context is always brought up
to date); the dry-run plan and progress totals from `todo`/`estimate`; the critical
path from `rounds`. A stage starts as soon as the stages it waits for have had their
turn, so independent stages overlap.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial

from promptgen.collector import run_pace
from promptgen.config import RunConfig
from promptgen.context import Context
from promptgen.errors import PromptgenError, sole_error
from promptgen.llm import LLM, bounded_gather
from promptgen.order import canonical
from promptgen.progress import Reporter
from promptgen.results import StageRecord
from promptgen.saving import Pace, Saver
from promptgen.stage import Phase, Projection, Scope, StageSpec, WorkItem
from promptgen.stages import MODULES

# A stage's todo is asked again after each pass (expansion rounds, a batch item to ask
# for again); a pass with only units already tried this run ends it, and so does this
# many passes (plus one per expansion round).
MAX_PASSES = 8


def waits_for(stage: StageSpec) -> tuple[str, ...]:
    return stage.waits_for


def _ordered() -> dict[str, StageSpec]:
    """Stages in an order where every stage comes after those it waits for."""
    declared = {spec.name: spec for spec in map(StageSpec.of, MODULES)}
    for name, stage in declared.items():
        unknown = set(waits_for(stage)) - set(declared)
        if unknown:
            raise RuntimeError(f"stage {name} waits for unknown stages {sorted(unknown)}")
    ordered: dict[str, StageSpec] = {}
    while len(ordered) < len(declared):  # level by level; names order a level
        ready = sorted(
            n for n, s in declared.items() if n not in ordered and set(s.waits_for) <= set(ordered)
        )
        if not ready:
            raise RuntimeError("stage requirements form a cycle")
        ordered.update((n, declared[n]) for n in ready)
    return ordered


STAGES: dict[str, StageSpec] = _ordered()


def complete(name: str, ctx: Context, cfg: RunConfig) -> bool:
    stage = STAGES[name]
    return not stage.enabled(cfg) or not stage.todo(ctx, cfg)


def unfinished(ctx: Context, cfg: RunConfig, phase: Phase | None = None) -> list[str]:
    """Enabled stages with work left (of one phase, when given)."""
    return [
        name
        for name, stage in STAGES.items()
        if (phase is None or stage.phase == phase) and not complete(name, ctx, cfg)
    ]


def plan(ctx: Context, cfg: RunConfig) -> dict[str, int]:
    """Calls per enabled stage still to make; a repair turn or a retry adds to these.

    A stage whose inputs exist counts its `todo`; one whose inputs are still to be made
    estimates from what the stages before it are expected to produce."""
    projection = Projection()
    calls: dict[str, int] = {}
    for name, stage in STAGES.items():
        if not stage.enabled(cfg):
            projection.complete.add(name)
            continue
        calls[name] = stage.estimate(ctx, cfg, projection)
        ready = all(r in projection.complete for r in stage.requires)
        if ready and not stage.todo(ctx, cfg):
            projection.complete.add(name)
    return {k: v for k, v in calls.items() if v}


# The models each stage calls: generation asks the `rules` model, its checks the `eval`
# model, the evaluation the models under test and their judges. A stage missing here
# fails `models_used` (and tests/test_pipeline_models.py), so a new stage says its own.
STAGE_MODELS: dict[str, Callable[[RunConfig], tuple[str, ...]]] = {
    **dict.fromkeys(
        ("behaviours", "input_spec", "intent", "rules", "inverse_rules", "tests", "expand"),
        lambda cfg: ("rules",),
    ),
    "compile_rules": lambda cfg: ("rules",),
    **dict.fromkeys(
        ("safety", "groundedness", "screen", "validity", "review"), lambda cfg: ("eval",)
    ),
    "baseline": lambda cfg: ("baseline",),
    "groundtruth": lambda cfg: (cfg.groundtruth_model, *cfg.groundtruth_judges),
    "runs": lambda cfg: (*cfg.models, *cfg.judges),  # a run's verdicts are asked at once
    "metrics": lambda cfg: cfg.judges,
}


def models_used(ctx: Context, cfg: RunConfig, planned: dict[str, int]) -> list[str]:
    """The models (aliases as given) of the stages this run will call: those with calls
    planned or work left. The run checks each one's backend and credentials before
    its first call."""
    used: dict[str, None] = {}
    for name in STAGES:
        if name in planned or not complete(name, ctx, cfg):
            used.update(dict.fromkeys(STAGE_MODELS[name](cfg)))
    return list(used)


def critical_path(cfg: RunConfig) -> int:
    """Rounds of calls that must happen one after another (the longest chain)."""
    depth: dict[str, int] = {}
    for name, stage in STAGES.items():
        before = max((depth[d] for d in waits_for(stage)), default=0)
        depth[name] = before + (stage.rounds(cfg) if stage.enabled(cfg) else 0)
    return max(depth.values(), default=0)


def batch_warning(note: str) -> str:
    """The line said when --batch fell back to calls one by one for a model."""
    return f"--batch: {note}, at the normal price (not the batch rate)"


class Runner:
    """Runs every stage of one context, saving after every unit as often as the save's
    own cost allows (promptgen.saving: answers finished since are in the response
    cache), after every stage, and at the end."""

    def __init__(
        self,
        ctx: Context,
        cfg: RunConfig,
        llm: LLM,
        reporter: Reporter,
        saver: Saver | None = None,
    ) -> None:
        self.ctx, self.cfg, self.llm, self.reporter = ctx, cfg, llm, reporter
        self.saver = saver
        self.pace = Pace()
        self._base_usage = ctx.usage.model_copy(deep=True)
        self._stage_base = {n: r.usage.model_copy() for n, r in ctx.stages.items()}
        self.planned = plan(ctx, cfg)
        self._finished = {name: asyncio.Event() for name in STAGES}
        self._complete: dict[str, bool] = {}
        self._warned: set[str] = set()
        self._failed: str | None = None  # the stage whose error stops the run
        ctx._checkpoint = self.checkpoint
        # with --batch; a batch is saved at once, and on disk before its answers are awaited
        llm.use_batches(ctx.batches, partial(self.save, "durable"))

    def checkpoint(self) -> None:
        """After a unit: saved when due (the last save's write finished, its pace)."""
        if self.pace.due() and not (self.saver is not None and self.saver.busy):
            self.save("checkpoint")

    def save(self, how: str = "checkpoint") -> None:
        """`checkpoint`: a snapshot written in the background; `durable`: the same,
        waited for; `final`: the indented file, waited for."""
        started = self.pace.clock()
        self._refusals()
        self.ctx.usage = self._base_usage + self.llm.usage.totals
        for name, record in self.ctx.stages.items():
            current = self.llm.usage.totals.by_stage.get(name)
            if current is not None:
                base = self._stage_base.get(name)
                record.usage = base + current if base else current.model_copy()
                record.calls_done = record.usage.calls
        canonical(self.ctx, list(STAGES))  # saved in one order, whatever finished first
        if self.saver is not None:
            if how == "final":
                self.saver.save(self.ctx)
            else:
                self.saver.checkpoint(self.ctx, wait=how == "durable")
        self.pace.saved(started)
        called = self.llm.usage.totals.by_model
        for note in self.ctx.batch_fallbacks:  # once per model called, as soon as known
            if note not in self._warned and any(note.startswith(f"{m}: ") for m in called):
                self._warned.add(note)
                self.reporter.warn(batch_warning(note))

    def _unsent(self) -> None:
        """What the prompt declares that a model under test's backend cannot be sent
        (the embedded model: tools, logit_bias): one warning per model, before its runs
        (formats/declared.py already warned of what no backend can send)."""
        from promptgen.prompting.invoke import call_settings

        params = call_settings(self.ctx.prompt, self.cfg.ev).params
        for model in self.cfg.models:
            unsent = self.llm.unsent(model, params)
            if unsent:
                self.reporter.warn(
                    f"{model} cannot be sent the prompt's {', '.join(unsent)}: its runs "
                    "answer without them (docs/llm.md#what-the-model-under-test-is-sent)"
                )

    def _refusals(self) -> None:
        """The schemas a server refused in this run's calls: recorded in the context and
        said once each, as soon as known (under --strict-output the error says it)."""
        for refusal in self.llm.schema_refusals:
            if refusal not in self.ctx.schema_refusals:
                self.ctx.schema_refusals.append(refusal)
            line = refusal.said()
            if refusal.instead is not None and line not in self._warned:
                self._warned.add(line)
                self.reporter.warn(line)

    async def run(self) -> Context:
        if self.cfg.evaluating:
            self.ctx.use_metrics([m.info for m in self.cfg.output_metrics])
            self._unsent()
        self.reporter.start(self.planned)
        poller = asyncio.create_task(self._poll())
        try:
            with run_pace():
                async with asyncio.TaskGroup() as group:
                    for name in STAGES:
                        group.create_task(self._stage(name))
        except BaseExceptionGroup as failed:  # the error itself, not a group holding it
            error = sole_error(failed)
            if error is failed:
                raise
            raise error from None
        finally:
            poller.cancel()
            self.reporter.update(self.llm.usage.totals.by_stage)
            self.save("final")
        return self.ctx

    async def _stage(self, name: str) -> None:
        stage = STAGES[name]
        try:
            for dep in waits_for(stage):
                await self._finished[dep].wait()
            self._complete[name] = await self._turn(name, stage)
        finally:
            self._finished[name].set()

    async def _turn(self, name: str, stage: StageSpec) -> bool:
        if not stage.enabled(self.cfg):
            return True
        record = self.ctx.stage(name)
        missing = [r for r in stage.requires if not self._complete.get(r, True)]
        if missing:
            record.status = "skipped"
            record.error = f"waits for {', '.join(missing)} (not finished)"
            self.reporter.stage_finished(record)
            return False
        items = stage.todo(self.ctx, self.cfg)
        if not items:
            record.status, record.error = "done", None
            record.failures.clear()
            if name in self.llm.usage.totals.by_stage:  # its calls were made in another's
                # turn (judging streamed with the runs): said like any stage's, the bar full
                record.calls_planned, record.duration_s = self.planned.get(name), None
                self.save()
                self.reporter.update(self.llm.usage.totals.by_stage)
                self.reporter.stage_finished(record)
            return True
        record.calls_planned = self.planned.get(name)
        record.status, record.error = "running", None
        record.started_at = datetime.now(UTC)
        started = time.perf_counter()
        try:
            left = await run_units(
                stage, name, self.ctx, self.cfg, self.llm, items, self.checkpoint
            )
        except asyncio.CancelledError:  # Ctrl-C: saved as interrupted, resumed next run
            why = f"stopped: stage {self._failed} failed" if self._failed else "interrupted"
            record.status, record.error = "interrupted", f"{why}; a re-run resumes"
            record.finished_at, record.duration_s = datetime.now(UTC), time.perf_counter() - started
            self.reporter.stage_finished(record)
            raise
        except Exception as err:  # e.g. a model file that fails its check: the run stops
            self._failed = self._failed or name  # the stages cancelled with it name it
            record.status = "failed"
            record.error = err.one_line() if isinstance(err, PromptgenError) else repr(err)
            record.finished_at, record.duration_s = datetime.now(UTC), time.perf_counter() - started
            self.reporter.stage_finished(record)
            raise
        finally:
            record.finished_at = datetime.now(UTC)
            record.duration_s = time.perf_counter() - started
        finish_record(record, left)
        self.save()
        self.reporter.stage_finished(record)
        return not left

    async def _poll(self) -> None:
        while True:
            self.reporter.update(self.llm.usage.totals.by_stage)
            await asyncio.sleep(0.2)


async def run_units(
    stage: StageSpec,
    name: str,
    ctx: Context,
    cfg: RunConfig,
    llm: LLM,
    items: list[WorkItem],
    save: Callable[[], None],
) -> list[WorkItem]:
    """Do the units, pass after pass, until none is left or a pass would only repeat
    units tried already; return what is left."""
    record = ctx.stage(name)
    scope = Scope(ctx, cfg, llm, name, save=save)
    tried: set[str] = set()

    async def unit(item: WorkItem) -> None:
        record.failures.pop(item.key, None)
        await stage.run(item, scope.for_unit(item.key))
        save()

    for _ in range(MAX_PASSES + cfg.gen.test_expansions):
        fresh = [i for i in items if i.key not in tried]
        if not fresh:
            break
        tried.update(i.key for i in fresh)
        await bounded_gather([partial(unit, i) for i in fresh])
        items = stage.todo(ctx, cfg)
    return items


def finish_record(record: StageRecord, left: list[WorkItem]) -> None:
    """The stage's status and its error line, from what is left and the failures kept.

    Failures of units that are no longer to do (a batch composed anew) are dropped, but
    when none of the units left has one, the last failure (by key) stays to say why."""
    if not left:
        record.status, record.error = "done", None
        record.failures.clear()
        return
    record.status = "failed"
    keys = {item.key for item in left}
    kept = {k: v for k, v in record.failures.items() if k in keys}
    if not kept and record.failures:
        last = max(record.failures)  # not the latest to finish: the same every run
        kept = {last: record.failures[last]}
    record.failures = kept
    failures = list(kept.values())
    if len(failures) == 1:
        record.error = failures[0]
    elif failures:
        record.error = f"{len(failures)} units failed, e.g. {failures[0]}"
    else:
        record.error = f"{len(left)} unit(s) left to do; a re-run resumes"


async def run_stage(name: str, ctx: Context, cfg: RunConfig, llm: LLM) -> Context:
    """One stage on its own, its requirements taken as met (tests and scripts)."""
    stage = STAGES[name]
    record = ctx.stage(name)
    if cfg.evaluating:
        ctx.use_metrics([m.info for m in cfg.output_metrics])
    items = stage.todo(ctx, cfg) if stage.enabled(cfg) else []
    llm.use_batches(ctx.batches, ctx.checkpoint)
    left = await run_units(stage, name, ctx, cfg, llm, items, ctx.checkpoint)
    finish_record(record, left)
    canonical(ctx, list(STAGES))
    return ctx
