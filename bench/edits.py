"""Edits benchmark: the cost of a run after a prompt edit, against a fresh run of the edit.

For each kind of edit (bench/edit_kinds.py: add an instruction, delete one, reword one
without changing its meaning, change a number in one, change only the author's test
rows, change only a model parameter) on every prompt in samples/, on a copy in a
temporary folder:

1. the sample is run once (version 1) into an output folder;
2. the edit run: the edited prompt is run again into (a copy of) that folder, so it
   continues version 1 (docs/carry-over.md);
3. the fresh run: the edited prompt run with --fresh into another copy.

No response cache, so every call is counted. Prints, per sample and kind, the
generation calls (calls to the rules model, by stage) of the edit run against the fresh
run's and their ratio, the rules and tests kept/added/retired, and both wall times
(runs of the model under test and verdicts included: both runs make them for every
test); then the issue's target: one added instruction on a sample with 6 rules costs at
most a third of a fresh generation. The server is the scripted fake of
bench/edits_fake.py in its own process on 127.0.0.1, at a fixed latency per call.
Samples run side by side (--jobs); each sample's runs one after another.

    python bench/edits.py [--latency 0.3] [--effort min] [--stepwise] [--jobs 4]
                          [--samples NAME ...] [--kinds KIND ...] [--keep DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import promptgen
from bench.edit_kinds import EDITS, KINDS, LABELS, Edit, apply, prompt_files
from bench.edits_fake import serving
from promptgen import Context, Options
from promptgen.api import gateway_settings
from promptgen.llm import LLM
from promptgen.llm.usage import UsageTracker
from promptgen.options import Generation, Models, Run
from promptgen.prompting.seeds import instruction_seeds
from promptgen.results import Usage

GEN, JUDGE, UNDER_TEST = "gen", "judge", "mut"  # the rules, eval and tested models
TARGET_RULES, TARGET_SHARE = 6, 1 / 3


class StageCalls(UsageTracker):
    """Usage accounting that also counts calls by (model, stage)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: Counter[tuple[str, str]] = Counter()

    def record(self, model: str, stage: str | None, usage: Usage) -> None:
        super().record(model, stage, usage)
        self.calls[(model, stage or "-")] += usage.calls


@dataclass
class Measured:
    """One run: its context, wall time, generation calls by stage and all calls."""

    ctx: Context
    wall: float
    generation: Counter[str]
    calls: int

    @property
    def generated(self) -> int:
        return sum(self.generation.values())


@dataclass
class Row:
    sample: str
    kind: str
    rules: int = 0  # rules of version 1
    instructions: int = 0  # its instruction sentences (more than rules: maxRules capped)
    skipped: str = ""  # why the kind does not apply
    edit: Measured | None = None
    fresh: Measured | None = None
    notes: list[str] = field(default_factory=list)


def options(url: str, out: Path, effort: str, stepwise: bool, fresh: bool = False) -> Options:
    return Options(
        effort=effort,  # type: ignore[arg-type]
        generation=Generation(stepwise="on" if stepwise else "off"),
        models=Models(api_base=url, rules_model=GEN, eval_model=JUDGE, models=[UNDER_TEST]),
        run=Run(out=out, cache=False, fresh=fresh),
    )


async def measure(source: Path, opts: Options, notes: list[str] | None = None) -> Measured:
    """Run `source` with `opts` through the library, counting calls; its wall time."""
    settings = gateway_settings(opts, env={}, cwd=source.parent)
    started = time.perf_counter()
    prepared = promptgen.prepare(source, opts, settings=settings)
    if notes is not None:
        notes.extend(prepared.notes)
    llm = LLM(prepared.cfg.settings)
    llm.usage = tracker = StageCalls()
    try:
        ctx = await promptgen.run_async(prepared, llm=llm)
    finally:
        await llm.aclose()
    wall = time.perf_counter() - started
    generation = Counter({s: n for (m, s), n in tracker.calls.items() if m == GEN})
    return Measured(ctx, wall, generation, sum(tracker.calls.values()))


async def sample_rows(
    url: str, sample: str, kinds: list[str], effort: str, stepwise: bool, work: Path
) -> list[Row]:
    """Version 1 of `sample`, then each kind's edit run and fresh run, in `work`."""
    base = work / "v1"
    shutil.copytree(REPO / "samples", base / "samples")
    first = await measure(base / "samples" / sample, options(url, base / "out", effort, stepwise))
    rows = []
    for kind in kinds:
        change = EDITS[sample][kind]
        seeds = len(instruction_seeds(first.ctx.prompt))
        row = Row(sample, kind, rules=len(first.ctx.rules), instructions=seeds)
        rows.append(row)
        if not isinstance(change, Edit):
            row.skipped = change.why
            continue
        folder = work / kind
        shutil.copytree(base / "samples", folder / "samples")
        apply(folder / "samples", sample, change)
        for name in ("edit", "fresh"):
            shutil.copytree(base / "out", folder / name)
        source = folder / "samples" / sample
        run = options(url, folder / "edit", effort, stepwise)
        row.edit = await measure(source, run, row.notes)
        again = options(url, folder / "fresh", effort, stepwise, fresh=True)
        row.fresh = await measure(source, again)
    return rows


async def all_rows(
    url: str,
    samples: list[str],
    kinds: list[str],
    effort: str,
    stepwise: bool,
    jobs: int,
    work: Path,
) -> list[Row]:
    limit = asyncio.Semaphore(jobs)

    async def one(index: int, sample: str) -> list[Row]:
        async with limit:
            return await sample_rows(url, sample, kinds, effort, stepwise, work / str(index))

    found = await asyncio.gather(*(one(i, s) for i, s in enumerate(samples)))
    return [row for rows in found for row in rows]


def counts(row: Row) -> tuple[str, str]:
    """'kept/added/retired(/reworded)' of the rules (not inverse) and of the tests."""
    assert row.edit is not None
    ctx = row.edit.ctx
    edit = ctx.edit
    assert edit is not None
    inverse = {r.id for r in ctx.inverse_rules} | {r.id for r in edit.rules_retired if r.inverse}
    kept = [i for i in edit.rules_kept if i not in inverse]
    added = [i for i in edit.rules_added if i not in inverse]
    retired = [r for r in edit.rules_retired if not r.inverse]
    reworded = f"/{len(edit.rules_reworded)}" if edit.rules_reworded else ""
    rules = f"{len(kept)}/{len(added)}/{len(retired)}{reworded}"
    new = [t for t in ctx.tests if t.id not in set(edit.tests_kept)]
    flagged = f" ({len(edit.tests_flagged)} flagged)" if edit.tests_flagged else ""
    tests = f"{len(edit.tests_kept)}/{len(new)}/{len(edit.tests_retired)}{flagged}"
    return rules, tests


def said(row: Row) -> str:
    """What promptgen read the edit as (the parenthesis of its one line)."""
    line = next((n for n in row.notes if "changed since version" in n), "")
    return line.split(" (", 1)[1].split("): keeping", 1)[0] if " (" in line else "-"


def ratio(row: Row) -> float:
    assert row.edit is not None and row.fresh is not None
    return row.edit.generated / row.fresh.generated if row.fresh.generated else 0.0


def by_stage(row: Row) -> str:
    """'intent 1/1, rules 1/1, ...': each stage's generation calls, edit/fresh."""
    assert row.edit is not None and row.fresh is not None
    stages = sorted({*row.edit.generation, *row.fresh.generation})
    return ", ".join(f"{s} {row.edit.generation[s]}/{row.fresh.generation[s]}" for s in stages)


HEADER = (
    f"{'sample':<44} {'edit':<7} {'gen calls':>9} {'ratio':>5}  {'rules k/a/r(/rw)':<16}"
    f" {'tests k/a/r':<13} {'wall (s)':>11}  promptgen read"
)


def short(sample: str) -> str:
    """A sample's name in the table: an LVE test by its folder."""
    return sample.split("/openai--")[0] if sample.startswith("lve/") else sample


def lines(rows: list[Row]) -> list[str]:
    out = [HEADER]
    for row in rows:
        name = f"{short(row.sample)} ({row.rules} rules)"
        if row.skipped:
            out.append(f"{name:<44} {row.kind:<7} n/a: {row.skipped}")
            continue
        assert row.edit is not None and row.fresh is not None
        rules, tests = counts(row)
        gen = f"{row.edit.generated}/{row.fresh.generated}"
        wall = f"{row.edit.wall:.1f}/{row.fresh.wall:.1f}"
        out.append(
            f"{name:<44} {row.kind:<7} {gen:>9} {ratio(row):5.2f}  {rules:<16} {tests:<13}"
            f" {wall:>11}  {said(row)}"
        )
        out.append(f"{'':<53}by stage (edit/fresh): {by_stage(row)}")
    return out


def target(rows: list[Row], effort: str) -> list[str]:
    """The issue's target, on every sample whose version 1 has 6 rules."""
    cases = [r for r in rows if r.kind == "add" and r.rules == TARGET_RULES and not r.skipped]
    head = (
        f"target: one added instruction on a sample with {TARGET_RULES} rules costs at most "
        f"a third of a fresh generation (effort {effort}):"
    )
    if not cases:
        return [head, f"  no sample has {TARGET_RULES} rules at effort {effort}: not measured"]
    out = [head]
    for row in cases:
        assert row.edit is not None and row.fresh is not None
        verdict = "PASS" if row.edit.generated <= TARGET_SHARE * row.fresh.generated else "FAIL"
        capped = (
            f"; {row.instructions} instructions: its rules at the maxRules cap"
            if row.instructions > row.rules
            else ""
        )
        out.append(
            f"  {verdict} {short(row.sample)}: {row.edit.generated} generation calls against "
            f"{row.fresh.generated} fresh ({ratio(row):.2f}; at most {TARGET_SHARE:.2f}){capped}"
        )
    passed = all(line.startswith("  PASS") for line in out[1:])
    out.append(f"  {'PASS' if passed else 'FAIL'} overall ({len(cases)} sample(s))")
    return out


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.3, help="seconds per call [0.3]")
    parser.add_argument("--effort", default="min", choices=("min", "low", "medium", "high"))
    parser.add_argument(
        "--stepwise", action="store_true", help="the stepwise (embedded-model) mode, forced"
    )
    parser.add_argument("--jobs", type=int, default=4, help="samples run side by side [4]")
    parser.add_argument("--samples", nargs="*", help="samples/ paths [every prompt there]")
    parser.add_argument("--kinds", nargs="*", choices=KINDS, help="kinds of edit [all six]")
    parser.add_argument("--keep", type=Path, help="keep every run's folders here")
    parser.add_argument("--api-base", help="a running edits fake (bench/edits_fake.py)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    found = prompt_files(REPO / "samples")
    missing = sorted(set(found) - set(EDITS))
    if missing:
        raise SystemExit(f"no edits written for {', '.join(missing)} (bench/edit_kinds.py)")
    samples = args.samples or found
    kinds = args.kinds or list(KINDS)
    mode = "stepwise (forced)" if args.stepwise else "whole prompt (default)"
    print(
        f"edits: {len(samples)} samples x {len(kinds)} kinds, effort {args.effort}, {mode}, "
        f"fake server at {args.latency * 1000:.0f} ms per call, no response cache"
    )
    print("kinds: " + "; ".join(f"{k} = {LABELS[k]}" for k in kinds))
    print(
        "gen calls = calls to the rules model, edit run/fresh run; rules and tests: kept/"
        "added/retired(/reworded) by the edit run; wall: edit/fresh, runs and verdicts "
        "included"
    )
    work = args.keep or Path(tempfile.mkdtemp(prefix="bench-edits-"))
    started = time.perf_counter()
    try:
        if args.api_base:
            rows = asyncio.run(
                all_rows(args.api_base, samples, kinds, args.effort, args.stepwise, args.jobs, work)
            )
        else:
            with serving(args.latency) as url:
                rows = asyncio.run(
                    all_rows(url, samples, kinds, args.effort, args.stepwise, args.jobs, work)
                )
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    print("\n".join(lines(rows)))
    print()
    print("\n".join(target(rows, args.effort)))
    print(f"bench wall time {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
