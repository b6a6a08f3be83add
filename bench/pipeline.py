"""Pipeline benchmark: wall time against the critical path, at every effort level.

Against the fake OpenAI-compatible server (its own process on 127.0.0.1) with 300 ms
per call, on a prompt with three inputs and two scenarios. Prints, per effort: calls,
wall time, wall / (critical-path depth x latency), and the speed-up over concurrency 1.
With --local, also times `--effort min` with the embedded 1.5B model.

    python bench/pipeline.py [--latency 0.3] [--skip-serial] [--local]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import openai  # noqa: F401  (imported before timing: it is process start-up, not pipeline work)

from bench.gateway import fake_server
from promptgen.llm import LLM, load_settings
from promptgen.pipeline import Runner
from promptgen.plan import critical_path
from promptgen.progress import PlainReporter
from promptgen.run import prepare

PROMPT = REPO / "bench" / "fixtures" / "two-scenarios.prompty"
EFFORTS = ("min", "low", "medium", "high")
LOCAL_SAMPLE = REPO / "samples" / "classify-sentiment.prompty"


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


def remote(latency: float, serial: bool) -> None:
    print(f"pipeline, fake server with {latency * 1000:.0f} ms per call, 3 inputs, 2 scenarios:")
    print("effort  calls  depth  wall (s)  wall/(depth*latency)  serial (s)  speed-up")
    with fake_server(latency, pipeline=True) as url:
        run_once(url, "min", concurrency=256)  # warm up: imports, first connections
        for effort in EFFORTS:
            ctx, wall, options = run_once(url, effort, concurrency=256)
            unfinished = [n for n, r in ctx.stages.items() if r.status != "done"]
            assert not unfinished, f"stages did not finish: {unfinished}"
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
    parser.add_argument("--local", action="store_true", help="also time the embedded model")
    args = parser.parse_args()
    remote(args.latency, serial=not args.skip_serial)
    if args.local:
        local()


if __name__ == "__main__":
    main()
