"""Scale benchmark: the evaluation of TESTS tests x 2 models x 2 runs, saved as it goes.

A context with many tests is built cheaply: the tests of one `--effort min` generation
of bench/fixtures/two-scenarios.prompty against the fake server (tests/fakellm.py, its
own process on 127.0.0.1, no latency), copied under new ids up to TESTS. Then the
evaluation stages run as `promptgen context.json --models "mut-a;mut-b" --eval-models
"judge-a;judge-b" --runs-per-test 2 --max-tests-to-run TESTS` would, saving
`context.json` as the CLI does (checkpoints while it runs, the final save at the end).
Prints, per size: runs, verdicts, wall, calls/s, peak RSS, context.json's size, and the
time the run spent saving (blocked on the event loop: the snapshot; the writes go on
in a background thread), and how many saves; then the ratio of each size's wall to
the first's against the ratio of their runs (the goal: 2x the runs in at most 2.2x the
time).
Each size is measured `--repeat` times (interleaved with the other sizes), each time in
a new process against a new fake server, and the fastest counts: what a size costs,
without the noise of a busy machine or the leftovers of an earlier measurement.

    python bench/scale.py [--sizes 1000,10000] [--concurrency 256] [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import aiohttp  # noqa: F401  (imported before timing: it is process start-up, not pipeline work)

import promptgen
from bench.gateway import fake_server
from promptgen import Context, Evaluation, Models, Options, Run, save_context
from promptgen.api import gateway_settings
from promptgen.llm import LLM
from promptgen.pipeline import Runner
from promptgen.progress import PlainReporter
from promptgen.saving import Pace, Saver

PROMPT = REPO / "bench" / "fixtures" / "two-scenarios.prompty"
EVALUATION = {"models": ["mut-a", "mut-b"], "eval_models": ["judge-a", "judge-b"]}


@dataclass
class Figures:
    tests: int
    runs: int
    verdicts: int
    calls: int
    wall: float
    context_bytes: int
    saves: int
    save_s: float
    peak_mib: float


def _prepare(source: Path, options: Options, tmp: Path) -> promptgen.Prepared:
    settings = gateway_settings(options, env={}, cwd=tmp)
    return promptgen.prepare(source, options, settings=settings)


def base_context(url: str, tmp: Path) -> Context:
    """One `--effort min` generation against the fake server (not timed)."""
    options = Options(
        effort="min", models=Models(api_base=url), run=Run(fresh=True, out=tmp / "gen")
    )
    prepared = _prepare(PROMPT, options, tmp)
    return promptgen.run(prepared, save=False)


def widen(ctx: Context, tests: int) -> Context:
    """`ctx` with its tests copied under new ids up to `tests` (runs and verdicts
    dropped, so only the evaluation is left to do)."""
    big = ctx.model_copy(deep=True)
    big.test_runs, big.metric_results = [], []
    models = [t for t in ctx.tests if t.valid is not False and t.safety in (None, "safe")]
    assert models, "the generation made no runnable test"
    big.tests = [
        models[i % len(models)].model_copy(update={"id": f"t{i:05d}", "parent_id": None})
        for i in range(tests)
    ]
    return big


async def _evaluate(prepared: promptgen.Prepared, concurrency: int) -> tuple[Context, Pace, int]:
    """What `promptgen.run_async` does, keeping the runner's save figures."""
    llm = LLM(prepared.cfg.settings, global_limit=concurrency, start_limit=concurrency)
    saver = Saver(prepared.out / "context.json")
    try:
        runner = Runner(prepared.ctx, prepared.cfg, llm, PlainReporter(quiet=True), saver)
        ctx = await runner.run()
    finally:
        saver.close()
        await llm.aclose()
    return ctx, runner.pace, llm.usage.totals.total.calls


def evaluate(url: str, seed: Context, tests: int, concurrency: int) -> Figures:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        context = save_context(widen(seed, tests), folder / "in" / "context.json")
        options = Options(
            models=Models(api_base=url, **EVALUATION),
            evaluation=Evaluation(runs_per_test=2, max_tests_to_run=tests),
            run=Run(out=folder / "out", cache=False),
        )
        prepared = _prepare(context, options, folder)
        assert prepared.cfg.settings is not None
        prepared.cfg.settings.concurrency = concurrency
        started = time.perf_counter()
        ctx, pace, calls = asyncio.run(_evaluate(prepared, concurrency))
        wall = time.perf_counter() - started
        unfinished = [n for n in ("runs", "metrics") if ctx.stage(n).status != "done"]
        assert not unfinished, f"evaluation stages did not finish: {unfinished}"
        size = (prepared.out / "context.json").stat().st_size
    return Figures(
        tests=tests,
        runs=len(ctx.test_runs),
        verdicts=len(ctx.metric_results),
        calls=calls,
        wall=wall,
        context_bytes=size,
        saves=pace.count,
        save_s=pace.seconds,
        peak_mib=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    )


def measure(seed_path: Path, tests: int, concurrency: int) -> Figures:
    """One size in this process, against a fake server of its own."""
    from promptgen.context import load_context

    seed = load_context(seed_path)
    with fake_server(0.0, pipeline=True) as url:
        return evaluate(url, seed, tests, concurrency)


def _in_child(seed: Path, tests: int, concurrency: int) -> Figures:
    """`measure` in a new process: no size pays for the heap, the collector's history or
    the fake server's records an earlier size left behind."""
    out = subprocess.run(
        [
            sys.executable,
            __file__,
            "--measure",
            str(tests),
            "--seed",
            str(seed),
            "--concurrency",
            str(concurrency),
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return Figures(**json.loads(out.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes", default="1000,10000", help="tests per evaluation, comma-separated"
    )
    parser.add_argument("--concurrency", type=int, default=256, help="calls in flight")
    parser.add_argument(
        "--repeat", type=int, default=3, help="measurements per size, interleaved; the best counts"
    )
    parser.add_argument("--measure", type=int, help=argparse.SUPPRESS)  # one size, in a child
    parser.add_argument("--seed", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure is not None:
        print(json.dumps(asdict(measure(args.seed, args.measure, args.concurrency))))
        return
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    print(
        'scale: --models "mut-a;mut-b" --eval-models "judge-a;judge-b" --runs-per-test 2, '
        f"fake server without latency, concurrency {args.concurrency}, saving context.json; "
        f"each size {args.repeat}x in a new process, interleaved, the fastest shown"
    )
    print(
        "tests    runs  verdicts   calls  wall (s)  calls/s  peak RSS (MiB)  context (MB)"
        "  saves  save time (s)  walls (s)"
    )
    measured: dict[int, list[Figures]] = {n: [] for n in sizes}
    with tempfile.TemporaryDirectory() as tmp:
        with fake_server(0.0, pipeline=True) as url:
            seed = save_context(base_context(url, Path(tmp)), Path(tmp) / "seed.json")
        for _ in range(args.repeat):
            for tests in sizes:
                measured[tests].append(_in_child(seed, tests, args.concurrency))
    rows = [min(measured[n], key=lambda f: f.wall) for n in sizes]
    for f in rows:
        walls = " ".join(f"{m.wall:.1f}" for m in measured[f.tests])
        print(
            f"{f.tests:>5}  {f.runs:>6}  {f.verdicts:>8}  {f.calls:>6}  {f.wall:8.1f}"
            f"  {f.calls / f.wall:7.0f}  {f.peak_mib:14.0f}  {f.context_bytes / 1e6:12.1f}"
            f"  {f.saves:>5}  {f.save_s:13.2f}  {walls}"
        )
    first = rows[0]
    for f in rows[1:]:
        print(
            f"{f.runs} runs / {first.runs} runs = {f.runs / first.runs:.2f}x the runs in "
            f"{f.wall / first.wall:.2f}x the time"
        )


if __name__ == "__main__":
    main()
