"""Many prompts in one run: `promptgen DIR_OR_GLOB...` (docs/runs.md#many-prompts-in-one-run).

Every prompt of the batch runs as `promptgen FILE` would, into `OUT/<slug>/` (so it
resumes there, and a later single run of that file finds it), while all of them share
one gateway: one response cache and one concurrency budget. A prompt that fails (a bad
file, a provider error, a bug) is recorded with its exit code and the others go on.
Then `OUT/summary.md`, `OUT/summary.csv` and, with `--junit`, one JUnit file (a
testsuite per prompt) are written.

The batch's exit code is the highest of its prompts' codes: 0 ok < 1 quality gate
(--fail-under, --fail-on-regression) < 2 bad input < 3 runtime or provider failure
< 130 interrupted.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from promptgen import api
from promptgen.context import Context
from promptgen.discover import Found, Plan, Skipped
from promptgen.errors import PromptgenError
from promptgen.export import run_exports
from promptgen.gate import RegressionError, gate, not_evaluated, regression_note
from promptgen.llm import LLM, GatewaySettings
from promptgen.llm.served import ask_for, asked_once, filled
from promptgen.options import Options
from promptgen.pipeline import plan as planned_calls
from promptgen.report.changes import EditChanges, load_changes
from promptgen.report.files import write_all
from promptgen.report.junit import SuiteSource, junit_batch_xml
from promptgen.report.overview import overall_compliance
from promptgen.report.summary import Entry, print_summary, write_summary
from promptgen.secrets import scrub
from promptgen.words import counted

STATUS = {0: "ok", 1: "below --fail-under", 2: "bad input", 3: "failed"}
NOT_EVALUATED = "not evaluated"
Notify = Callable[[str], None]


@dataclass
class PromptRun:
    """One prompt of a batch: where it was written, its context (None when it failed
    before running), its exit code and, when it failed, the one-line error."""

    found: Found
    out: Path
    ctx: Context | None = None
    code: int = 0
    error: str | None = None
    notes: list[str] = field(default_factory=list)
    # Models were named and no test ran on them: why (gate.not_evaluated), else None.
    nothing: str | None = None
    models: tuple[str, ...] = ()

    @property
    def status(self) -> str:
        if self.nothing is not None and self.code in (0, 1):
            return NOT_EVALUATED  # never "ok" (nor "below --fail-under") for nothing
        return STATUS.get(self.code, "failed")

    @property
    def name(self) -> str:
        return self.found.slug


@dataclass
class Batch:
    out: Path
    runs: list[PromptRun]
    skipped: list[Skipped]
    others: int = 0

    @property
    def code(self) -> int:
        """The highest exit code of its prompts (0 ok, 1 gate, 2 bad input, 3 failure)."""
        return max((r.code for r in self.runs), default=0)


def entries(batch: Batch) -> list[Entry]:
    return [
        Entry(r.name, str(r.found.path), r.status, r.code, r.ctx, r.error, r.notes, r.models)
        for r in batch.runs
    ]


def write_batch_files(batch: Batch, junit: Path | None) -> list[Path]:
    """OUT/summary.md, OUT/summary.csv and, when asked, the JUnit file (a testsuite per
    prompt); returns their paths."""
    skipped = [(str(s.path), s.reason) for s in batch.skipped]
    written = write_summary(batch.out, entries(batch), batch.code, skipped, batch.others)
    if junit is not None:
        suites = [SuiteSource(r.name, r.ctx, r.code, r.error) for r in batch.runs]
        api.write_file(junit, junit_batch_xml(suites), f"--junit {junit}")
        written.append(junit)
    return written


def print_batch_summary(batch: Batch) -> None:
    """The summary as printed at the end of a batch: summary.md's figures in a form that
    reads at 80 columns (the files keep every column)."""
    skipped = [(str(s.path), s.reason) for s in batch.skipped]
    print_summary(entries(batch), batch.code, skipped, batch.others)


def batch_out(options: Options) -> Path:
    return options.run.out or api.DEFAULT_OUT


def _prompt_options(options: Options, out: Path) -> Options:
    """The batch's options for one prompt: its own folder, no JUnit file of its own."""
    mine = options.model_copy(deep=True)
    mine.run.out = out
    mine.run.junit = None
    return mine


def _same_gateway(a: GatewaySettings, b: GatewaySettings) -> bool:
    keys = ("models", "api_base", "concurrency", "timeout", "cache", "cache_dir")
    return all(getattr(a, k) == getattr(b, k) for k in keys)


async def run_batch_async(plan: Plan, options: Options, notify: Notify | None = None) -> Batch:
    """Run every prompt of `plan` at once through one shared gateway; write each one's
    files and the summary files. `notify` gets one line per event (progress, notes)."""
    say = notify or (lambda line: None)
    out = batch_out(options)
    api.check_outputs(out, options.run)
    said: set[str] = set()  # refusals said: once for the batch, not once per prompt
    with asked_once():  # the server's model list: one question for every prompt
        settings = api.gateway_settings(options)
        shared = LLM(filled(settings, ask_for(settings)))
        try:
            total = len(plan.prompts)
            jobs = [
                _run_one(item, options, out, shared, say, f"[{i}/{total}]", said)
                for i, item in enumerate(plan.prompts, start=1)
            ]
            runs = await asyncio.gather(*jobs)
        finally:
            await shared.aclose()
    batch = Batch(out, list(runs), plan.skipped, plan.others)
    write_batch_files(batch, options.run.junit)
    return batch


def run_batch(plan: Plan, options: Options, notify: Notify | None = None) -> Batch:
    """The blocking twin of `run_batch_async`."""
    return asyncio.run(run_batch_async(plan, options, notify))


async def _run_one(
    item: Found, options: Options, root: Path, shared: LLM, say: Notify, tag: str, said: set[str]
) -> PromptRun:
    run = PromptRun(item, root / item.slug)
    mine = _prompt_options(options, run.out)
    try:
        if item.error is not None:
            raise item.error
        prepared = api.prepare(item.path, mine)
        run.out = prepared.out
        for line in (*prepared.ctx.prompt.warnings, *prepared.notes):
            say(f"{item.slug}: {line}")
        assert prepared.cfg.settings is not None  # api.prepare always resolves them
        own = not _same_gateway(prepared.cfg.settings, shared.settings)
        if own:  # e.g. a resumed run keeps the server it was started with
            say(f"{item.slug}: its saved settings need a gateway of its own")
        say(f"{tag} {item.slug}: running ({item.path})")
        strict = prepared.cfg.settings.strict_output  # a prompt's own strictOutput
        run.ctx = await api.run_async(
            prepared, llm=None if own else shared.for_run(strict_output=strict)
        )
        changes = load_changes(run.ctx, prepared.out)  # what an edit of the prompt did
        _write(run.ctx, prepared.out, mine, run, changes)
        for line in [r.said() for r in run.ctx.schema_refusals if r.instead is not None]:
            if line not in said:  # a refused schema: said once for the batch
                said.add(line)
                say(f"warning: {line}")
        run.nothing = not_evaluated(run.ctx, prepared.cfg)
        if run.nothing is not None:
            run.models = prepared.cfg.models
            run.notes.append(run.nothing)
        note = regression_note(run.ctx, changes, mine.run.fail_on_regression)
        if note is not None:
            run.notes.append(note)
        try:
            gate(run.ctx, prepared.cfg, changes)
        except RegressionError as err:
            run.notes += [f"regression: {line}" for line in err.lines]
            raise
    except PromptgenError as err:
        run.code, run.error = err.exit_code, err.one_line()
    except Exception as err:  # a bug on one prompt must not sink the others
        message = " ".join(f"{type(err).__name__}: {err}".split())
        run.code, run.error = 3, scrub(f"internal error: {message}")
    say(f"{tag} {item.slug}: {_outcome(run)}")
    return run


def _write(
    ctx: Context, out: Path, options: Options, run: PromptRun, changes: EditChanges | None
) -> None:
    write_all(ctx, out, changes)
    for result in run_exports(ctx, options.run, out):
        run.notes.append(f"export {result.target}: {len(result.paths)} file(s)")
        run.notes += [f"{result.target}: {n}" for n in (*result.notes, *result.skipped)]


def _outcome(run: PromptRun) -> str:
    if run.error is not None:
        return f"{run.status} (exit {run.code}): {run.error}"
    ctx = run.ctx
    assert ctx is not None
    rate = overall_compliance(ctx)
    shown = "" if rate is None else f", compliance {rate:.1f}%"
    tests, runs = counted(len(ctx.tests), "test"), counted(len(ctx.test_runs), "run")
    return f"{run.status}: {tests}, {runs}{shown} -> {run.out}"


@dataclass
class PlannedPrompt:
    """A prompt of a batch as `--dry-run` shows it: its folder and planned calls, or the
    error that will stop it."""

    found: Found
    out: Path
    calls: int | None = None
    prepared: api.Prepared | None = None
    error: PromptgenError | None = None


def plan_batch(plan: Plan, options: Options) -> list[PlannedPrompt]:
    """Prepare every prompt (resume included) and count its planned calls; call nothing."""
    out = batch_out(options)
    api.check_outputs(out, options.run)
    planned = []
    with asked_once():
        for item in plan.prompts:
            entry = PlannedPrompt(item, out / item.slug)
            try:
                if item.error is not None:
                    raise item.error
                prepared = api.prepare(item.path, _prompt_options(options, entry.out))
                entry.prepared = prepared
                entry.calls = sum(planned_calls(prepared.ctx, prepared.cfg).values())
            except PromptgenError as err:
                entry.error = err
            planned.append(entry)
    return planned


def dry_run_listing(plan: Plan, planned: list[PlannedPrompt]) -> str:
    """What a batch will run (format, folder, planned calls) and what it skips, and why."""
    lines = [f"{len(planned)} prompt(s) to run:"]
    for entry in planned:
        item = entry.found
        if entry.error is not None:
            lines.append(f"  error  {item.path}: {entry.error.one_line()}")
            continue
        lines.append(
            f"  run    {item.path}  [{item.format or 'context'}]  -> {entry.out}  "
            f"({counted(entry.calls or 0, 'call')} planned)"
        )
    if plan.skipped:
        lines.append(f"{len(plan.skipped)} file(s) skipped:")
        lines += [f"  skip   {s.path}: {s.reason}" for s in plan.skipped]
    if plan.others:
        lines.append(f"{plan.others} other file(s) of types no format reads, not listed")
    return "\n".join(lines)
