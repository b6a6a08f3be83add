"""Pipeline benchmark: wall time against the critical path, at every effort level.

Against the fake OpenAI-compatible server (its own process on 127.0.0.1) with 300 ms
per call, on a prompt with three inputs and two scenarios. Prints, per effort: calls,
wall time, wall / (critical-path depth x latency), and the speed-up over concurrency 1.

Then the evaluation phase, timed on its own: the context each effort generated is
saved and evaluated again as `promptgen context.json --models "mut-a;mut-b"
--eval-models "judge-a;judge-b" --runs-per-test 2` would (no response cache, so every
call is a real one), with the effort's own maxTestsToRun (10, 30, 100, all; or
--max-tests-to-run), and once more with `--groundtruth-model gt-model`. Same figures,
against the evaluation's rounds: runs -> metrics (2), or groundtruth answer -> score
beside the runs, then metrics (3). The concurrency-1 evaluation (`--concurrency 1`: one
call in flight per model, so the two models or the two judges still overlap) runs only
when it is expected to take at most --serial-budget seconds (calls x latency / 2).
With --local, also times `--effort min` with the embedded 1.5B model.

    python bench/pipeline.py [--latency 0.3] [--skip-serial] [--serial-budget 60]
                             [--max-tests-to-run N] [--local]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import openai  # noqa: F401  (imported before timing: it is process start-up, not pipeline work)

from bench.gateway import fake_server
from promptgen.context import Context, save_context
from promptgen.llm import LLM, load_settings
from promptgen.options import Options
from promptgen.pipeline import Runner
from promptgen.plan import critical_path, planned_calls
from promptgen.progress import PlainReporter
from promptgen.run import Prepared, prepare, runtime_options
from promptgen.stages.select import eval_tests

PROMPT = REPO / "bench" / "fixtures" / "two-scenarios.prompty"
EFFORTS = ("min", "low", "medium", "high")
LOCAL_SAMPLE = REPO / "samples" / "classify-sentiment.prompty"
# The evaluation phase of the issue: 2 models under test, 2 eval models, runsPerTest 2.
EVALUATION = {
    "models": ["mut-a", "mut-b"],
    "evals": True,
    "eval_models": ["judge-a", "judge-b"],
    "runs_per_test": 2,
}
GROUNDTRUTH = {"groundtruth": True, "groundtruth_model": "gt-model"}
EVAL_STAGES = ("groundtruth", "runs", "metrics")


def run_once(  # type: ignore[no-untyped-def]
    url: str | None, effort: str, concurrency: int, model: str | None = None, prompt: Path = PROMPT
):
    with tempfile.TemporaryDirectory() as tmp:
        prepared = prepare(prompt, Path(tmp) / "out", {"effort": effort}, fresh=True)
        cli = {"api_base": url, "concurrency": concurrency, "cache": False}
        if model:
            cli.update({a: model for a in ("rules", "eval", "baseline")})
        settings = load_settings(cli, env={}, cwd=Path(tmp))

        async def go():  # type: ignore[no-untyped-def]
            llm = LLM(settings, global_limit=max(32, concurrency))
            runner = Runner(
                prepared.ctx, llm, prepared.options, PlainReporter(quiet=True), lambda c: None
            )
            started = time.perf_counter()
            ctx = await runner.run()
            wall = time.perf_counter() - started
            await llm.aclose()
            return ctx, wall

        ctx, wall = asyncio.run(go())
        return ctx, wall, prepared.options


def evaluate_once(
    url: str, context: Path, cli: dict[str, Any], concurrency: int | None
) -> tuple[Context, float, Options, int]:
    """Evaluate a saved context as `promptgen context.json --models ...` does (without the
    report files); returns the context, the wall time of the stages, the options and the
    calls made. `concurrency` None: the widest round's fan-out (see `fan_out`)."""
    with tempfile.TemporaryDirectory() as tmp:
        prepared = prepare(context, Path(tmp) / "out", cli, fresh=False)
        settings = load_settings(
            {"api_base": url, "concurrency": 1, "cache": False}, env={}, cwd=Path(tmp)
        )
        options = runtime_options(prepared.options, LLM(settings))
        width = fan_out(prepared, options)
        settings.concurrency = concurrency or width

        async def go() -> tuple[Context, float, int]:
            llm = LLM(settings, global_limit=max(32, settings.concurrency or 1))
            runner = Runner(prepared.ctx, llm, options, PlainReporter(quiet=True), lambda c: None)
            started = time.perf_counter()
            ctx = await runner.run()
            wall = time.perf_counter() - started
            await llm.aclose()
            return ctx, wall, llm.usage.totals.total.calls

        ctx, wall, calls = asyncio.run(go())
        unfinished = [n for n in EVAL_STAGES if n in ctx.stages and ctx.stage(n).status != "done"]
        assert not unfinished, f"evaluation stages did not finish: {unfinished}"
        return ctx, wall, options, calls


def fan_out(prepared: Prepared, options: Options) -> int:
    """Calls of the widest round: the runs beside the groundtruth answers, or the metrics.
    The bench sets the gateway's concurrency (per model and overall) to it, so no call
    waits for a slot: the default of 8 per model would make the bench measure the limit."""
    plan = planned_calls(prepared.ctx, options)
    return max(plan.get("runs", 0) + plan.get("groundtruth", 0), plan.get("metrics", 0))


def evaluation_rounds(options: Options) -> int:
    """The evaluation's share of the critical path (plan.critical_path)."""
    return critical_path(options) - critical_path(options.model_copy(update={"models": []}))


def remote(latency: float, serial: bool, budget: float, max_tests: int | None) -> None:
    print(f"pipeline, fake server with {latency * 1000:.0f} ms per call, 3 inputs, 2 scenarios:")
    print("effort  calls  depth  wall (s)  wall/(depth*latency)  serial (s)  speed-up")
    contexts = Path(tempfile.mkdtemp(prefix="bench-contexts-"))
    with fake_server(latency, pipeline=True) as url:
        run_once(url, "min", concurrency=256)  # warm up: imports, first connections
        for effort in EFFORTS:
            ctx, wall, options = run_once(url, effort, concurrency=256)
            unfinished = [n for n, r in ctx.stages.items() if r.status != "done"]
            assert not unfinished, f"stages did not finish: {unfinished}"
            save_context(ctx, contexts / effort / "context.json")  # evaluated below
            calls = ctx.usage.total.calls
            depth = critical_path(options)
            ratio = wall / (depth * latency)
            serial_text = speed = "-"
            if serial:
                _, serial_wall, _ = run_once(url, effort, concurrency=1)
                serial_text, speed = f"{serial_wall:8.1f}", f"{serial_wall / wall:6.1f}x"
            print(
                f"{effort:<7} {calls:>5}  {depth:>5}  {wall:8.2f}  {ratio:20.2f}  "
                f"{serial_text:>10}  {speed:>8}"
            )
    try:
        evaluation(latency, contexts, serial, budget, max_tests)
    finally:
        shutil.rmtree(contexts, ignore_errors=True)


def evaluation(
    latency: float, contexts: Path, serial: bool, budget: float, max_tests: int | None
) -> None:
    bound = "the effort's maxTestsToRun" if max_tests is None else f"maxTestsToRun {max_tests}"
    print()
    print(
        'evaluation phase alone: --models "mut-a;mut-b" --eval-models "judge-a;judge-b" '
        f"--runs-per-test 2, {bound}; +gt: --groundtruth-model gt-model"
    )
    print(
        "(--concurrency = the widest round's calls, per model and overall, so no call waits "
        "for a gateway slot [default 8 per model];\n no response cache, context saves not "
        "timed; a fresh fake server per evaluation; overhead = (wall - rounds*latency) / calls;\n"
        " each run is judged as soon as it finishes, so the runs stage includes most judging)"
    )
    print(
        "effort     tests  calls  rounds  wall (s)  wall/(rounds*latency)  serial (s)  speed-up"
        "  overhead/call  stages (s)"
    )
    base = {**EVALUATION, "max_tests_to_run": max_tests}
    with fake_server(latency, pipeline=True) as url:  # warm up the evaluation code paths
        evaluate_once(url, contexts / "min" / "context.json", {**base, **GROUNDTRUTH}, None)
    skipped = []
    for effort in EFFORTS:
        for label, cli in ((effort, base), (f"{effort}+gt", {**base, **GROUNDTRUTH})):
            context = contexts / effort / "context.json"
            # A fresh server per evaluation: the fake responder's bookkeeping grows with
            # every call it has answered (PipelineResponder.seen).
            with fake_server(latency, pipeline=True) as url:
                ctx, wall, options, calls = evaluate_once(url, context, cli, None)
            rounds = evaluation_rounds(options)
            ratio = wall / (rounds * latency)
            overhead = (wall - rounds * latency) / calls * 1000
            tests = len(eval_tests(ctx, options))
            stages = " ".join(
                f"{n}={ctx.stage(n).duration_s or 0:.2f}" for n in EVAL_STAGES if n in ctx.stages
            )
            serial_text = speed = "-"
            expected = calls * latency / 2  # two models under test, then two judges
            if serial and expected <= budget:
                with fake_server(latency, pipeline=True) as url:
                    _, serial_wall, _, _ = evaluate_once(url, context, cli, 1)
                serial_text, speed = f"{serial_wall:8.1f}", f"{serial_wall / wall:6.1f}x"
            elif serial:
                skipped.append(f"{label} (~{expected:.0f} s)")
            print(
                f"{label:<10} {tests:>5}  {calls:>5}  {rounds:>6}  {wall:8.2f}  {ratio:21.2f}  "
                f"{serial_text:>10}  {speed:>8}  {overhead:10.1f} ms  {stages}"
            )
    if skipped:
        print(
            f"concurrency-1 evaluations over --serial-budget {budget:g} s skipped: "
            + ", ".join(skipped)
        )


def local() -> None:
    print("embedded model local/qwen2.5-coder-1.5b, --effort min, samples/" + LOCAL_SAMPLE.name)
    ctx, wall, _ = run_once(
        None, "min", concurrency=1, model="local/qwen2.5-coder-1.5b", prompt=LOCAL_SAMPLE
    )
    for name, record in ctx.stages.items():
        u = record.usage
        print(
            f"  {name:<14} {u.calls:>3} calls  {u.prompt_tokens:>6} prompt  "
            f"{u.completion_tokens:>5} generated  {record.duration_s or 0:6.1f} s"
        )
    print(f"  wall time {wall / 60:.1f} min, {len(ctx.rules)} rules, {len(ctx.tests)} tests")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.3)
    parser.add_argument("--skip-serial", action="store_true", help="skip the concurrency-1 runs")
    parser.add_argument(
        "--serial-budget",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="run a concurrency-1 evaluation only when calls x latency / 2 is at most this [60]",
    )
    parser.add_argument(
        "--max-tests-to-run",
        type=int,
        default=None,
        metavar="N",
        help="tests per evaluation [the effort's maxTestsToRun: 10, 30, 100, all]",
    )
    parser.add_argument("--local", action="store_true", help="also time the embedded model")
    args = parser.parse_args()
    remote(
        args.latency,
        serial=not args.skip_serial,
        budget=args.serial_budget,
        max_tests=args.max_tests_to_run,
    )
    if args.local:
        local()


if __name__ == "__main__":
    main()
