"""Pipeline benchmark: start-up, wall time against the chain of dependent calls, caching.

Against the fake OpenAI-compatible server (its own process on 127.0.0.1) with 300 ms
per call. Prints:

1. Start-up (bench/startup.py): `--version`, `inspect`, and launch -> first request.
2. Generation at every effort on a prompt with three inputs and two scenarios: calls,
   the declared critical path (depth), wall, wall / (depth x latency), and the calls a
   fully cached re-run makes, counted by the server (asserted to be 0).
3. The speech-tag-shaped workload (PromptPex's speech-tag sample when ../shared/corpus is
   there, else bench/fixtures/word-tag.prompty: one input, one scenario) at min and
   medium as one command with evaluation: `--models "mut-a;mut-b" --eval-models
   "judge-a;judge-b" --runs-per-test 2 --groundtruth-model gt-model`, where the fake
   judge scores 30 % of the groundtruth answers below the threshold. Wall, calls, the
   dependent levels measured from the calls' own spans (bench/levels.py), wall /
   (levels x latency), and the cached re-run's calls (asserted 0). `--levels` adds the
   levels each stage's calls occupy.
4. The evaluation phase alone: the context each effort generated, evaluated again as
   `promptgen context.json --models "mut-a;mut-b" --eval-models "judge-a;judge-b"
   --runs-per-test 2` would (no response cache), with the effort's own maxTestsToRun (10,
   30, 100, all; or --max-tests-to-run), and once more with `--groundtruth-model gt-model`.

5. The chain at the gateway's defaults: the speech-tag workload at medium, as section 3
   runs it but with no --concurrency (a model's limit starts at 8 and adapts,
   promptgen/llm/adaptive.py), against the fake server and against
   ../shared/tools/mockllm.py at --latency (skipped, saying so, where it is absent): the
   declared levels (pipeline.critical_path) x latency, the wall, their ratio, the time
   calls waited for a slot (from wanting one to holding it, summed; both servers take
   every call, so every wait is one the server would not have asked for), the peak in
   flight, and per model the calls, waits, peak in flight and where its limit ended.

Sections 1-4 set the gateway's limits to the widest round (`fan_out`), so they measure
the chain and the client, not the limit. `--vs-serial` adds the same work at
concurrency 1 (one call in flight per model) where it is expected to take at most
--serial-budget seconds. With --local, also times `--effort min` with the embedded 1.5B
model. `--chain` runs section 5 alone.

    python bench/pipeline.py [--latency 0.3] [--vs-serial] [--serial-budget 60] [--levels]
                             [--max-tests-to-run N] [--skip-startup] [--local] [--chain]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import json
import urllib.request

import aiohttp  # noqa: F401  (imported before timing: it is process start-up, not pipeline work)

import promptgen
from bench import startup
from bench.gateway import fake_server
from bench.levels import levels
from promptgen import Context, Evaluation, Models, Options, Run, RunConfig, save_context
from promptgen.api import gateway_settings
from promptgen.llm import LLM
from promptgen.llm.limits import Limits
from promptgen.pipeline import critical_path, plan
from promptgen.selection import eval_tests

PROMPT = REPO / "bench" / "fixtures" / "two-scenarios.prompty"
SPEECH_TAG = REPO.parent / "shared" / "corpus" / "promptpex" / "samples" / "speech-tag"
WORD_TAG = REPO / "bench" / "fixtures" / "word-tag.prompty"
MOCKLLM = REPO.parent / "shared" / "tools" / "mockllm.py"
GT_LOW_SHARE = 0.3  # groundtruth answers the fake judge scores below the threshold
EFFORTS = ("min", "low", "medium", "high")
LOCAL_SAMPLE = REPO / "samples" / "classify-sentiment.prompty"
# The evaluation phase of the issue: 2 models under test, 2 eval models, runsPerTest 2.
EVALUATION = {"models": ["mut-a", "mut-b"], "eval_models": ["judge-a", "judge-b"]}
GROUNDTRUTH = {"groundtruth_model": "gt-model"}
ROLE_MODEL = "openai/default"  # the id the fake servers answer as the rules model
EVAL_STAGES = ("groundtruth", "runs", "metrics")


def _prepare(source: Path | str, options: Options, tmp: Path) -> promptgen.Prepared:
    """`promptgen.prepare` with the gateway settings of these options alone (no
    environment, no config file), so the bench measures the same thing everywhere."""
    settings = gateway_settings(options, env={}, cwd=tmp)
    return promptgen.prepare(source, options, settings=settings)


async def _timed(
    prepared: promptgen.Prepared,
    global_limit: int | None,
    spans: list | None = None,
    start_limit: int | None = None,
) -> tuple[Context, float, int, Limits]:
    """The stages through the library API, without saving; wall time of the stages.
    `spans`, when given, receives every call's (stage, start, end). None for the limits:
    the gateway's defaults. Returns the gateway's limits too (what calls waited)."""
    llm = LLM(prepared.cfg.settings, global_limit=global_limit, start_limit=start_limit)
    llm.usage.timeline = spans
    started = time.perf_counter()
    ctx = await promptgen.run_async(prepared, llm=llm, save=False)
    wall = time.perf_counter() - started
    await llm.aclose()
    return ctx, wall, llm.usage.totals.total.calls, llm.limits


def server_requests(url: str) -> int:
    """Requests the fake server has answered (its own count, not promptgen's)."""
    with urllib.request.urlopen(url.rstrip("/") + "/stats", timeout=10) as reply:
        return int(json.loads(reply.read())["requests"])


def cached_rerun_calls(url: str, run: Any) -> int:
    """Run twice on one response cache, each with a fresh context; the requests the
    second run sent, as the server counted them."""
    with tempfile.TemporaryDirectory() as cache:
        run(Path(cache))
        before = server_requests(url)
        run(Path(cache))
        return server_requests(url) - before


def measure(
    source: Path,
    options: Options,
    concurrency: int | None,
    cache: Path | None = None,
    spans: list | None = None,
) -> tuple[Context, float, RunConfig, int]:
    """Prepare `source` in a temporary folder and time its stages: `concurrency` calls
    in flight per model and overall (None: the widest round's fan-out), through the
    response cache in `cache` (None: no cache). Returns the context, the wall time of
    the stages, the configuration and the calls made."""
    options.run.cache = cache is not None
    with tempfile.TemporaryDirectory() as tmp:
        options.run.out = Path(tmp) / "out"
        prepared = _prepare(source, options, Path(tmp))
        assert prepared.cfg.settings is not None
        width = concurrency or fan_out(prepared.ctx, prepared.cfg)
        prepared.cfg.settings.cache_dir = cache
        prepared.cfg.settings.concurrency = width  # wider than the flag allows
        ctx, wall, calls, _ = asyncio.run(_timed(prepared, max(32, width), spans, width))
        return ctx, wall, prepared.cfg, calls


def run_once(
    url: str | None,
    effort: str,
    concurrency: int,
    model: str | None = None,
    prompt: Path = PROMPT,
    cache: Path | None = None,
) -> tuple[Context, float, RunConfig]:
    """Generation only; with `cache`, through the response cache in that folder."""
    models = Models(api_base=url)
    if model:
        models = Models(rules_model=model, eval_model=model, baseline_model=model)
    options = Options(effort=effort, models=models, run=Run(fresh=True))
    ctx, wall, cfg, _ = measure(prompt, options, concurrency, cache)
    return ctx, wall, cfg


def workload_once(
    url: str, prompt: Path, effort: str, concurrency: int, cache: Path | None = None
) -> tuple[Context, float, RunConfig, list]:
    """The whole command, generation and evaluation with groundtruth, as
    `promptgen PROMPT --effort E --models "mut-a;mut-b" --eval-models "judge-a;judge-b"
    --runs-per-test 2 --groundtruth-model gt-model` runs it; returns the calls' spans."""
    options = Options(
        effort=effort,
        models=Models(api_base=url, **EVALUATION, **GROUNDTRUTH),
        evaluation=Evaluation(runs_per_test=2),
        run=Run(fresh=True),
    )
    spans: list = []
    ctx, wall, cfg, _ = measure(prompt, options, concurrency, cache, spans)
    unfinished = [n for n, r in ctx.stages.items() if r.status != "done"]
    assert not unfinished, f"stages did not finish: {unfinished}"
    return ctx, wall, cfg, spans


def evaluate_once(
    url: str, context: Path, given: dict[str, Any], concurrency: int | None
) -> tuple[Context, float, RunConfig, int]:
    """Evaluate a saved context as `promptgen context.json --models ...` does (without the
    report files), with no response cache. `concurrency` None: the widest round's
    fan-out (see `fan_out`)."""
    models = {k: v for k, v in given.items() if k in Models.model_fields}
    evaluation = {k: v for k, v in given.items() if k in Evaluation.model_fields}
    options = Options(
        models=Models(api_base=url, **models),
        evaluation=Evaluation(runs_per_test=2, **evaluation),
    )
    ctx, wall, cfg, calls = measure(context, options, concurrency)
    unfinished = [n for n in EVAL_STAGES if n in ctx.stages and ctx.stage(n).status != "done"]
    assert not unfinished, f"evaluation stages did not finish: {unfinished}"
    return ctx, wall, cfg, calls


def fan_out(ctx: Context, cfg: RunConfig) -> int:
    """Calls of the widest round: the runs beside the groundtruth answers, or the metrics.
    The bench sets the gateway's concurrency (per model and overall) to it, so no call
    waits for a slot: the gateway's own limit (8 per model at first, growing as answers
    come) would make the bench measure the limit; section 5 (`chain`) measures that."""
    calls = plan(ctx, cfg)
    return max(calls.get("runs", 0) + calls.get("groundtruth", 0), calls.get("metrics", 0))


def evaluation_rounds(cfg: RunConfig) -> int:
    """The evaluation's share of the critical path (pipeline.critical_path)."""
    return critical_path(cfg) - critical_path(dataclasses.replace(cfg, models=()))


def remote(
    latency: float, serial: bool, budget: float, max_tests: int | None, show_levels: bool
) -> None:
    print(f"pipeline, fake server with {latency * 1000:.0f} ms per call, 3 inputs, 2 scenarios:")
    print(
        "effort  calls  depth  wall (s)  wall/(depth*latency)  cached re-run calls"
        "  serial (s)  speed-up"
    )
    contexts = Path(tempfile.mkdtemp(prefix="bench-contexts-"))
    with fake_server(latency, pipeline=True) as url:
        run_once(url, "min", concurrency=256)  # warm up: imports, first connections
        for effort in EFFORTS:
            ctx, wall, cfg = run_once(url, effort, concurrency=256)
            unfinished = [n for n, r in ctx.stages.items() if r.status != "done"]
            assert not unfinished, f"stages did not finish: {unfinished}"
            save_context(ctx, contexts / effort / "context.json")  # evaluated below
            calls = ctx.usage.total.calls
            depth = critical_path(cfg)
            ratio = wall / (depth * latency)
            again = cached_rerun_calls(url, lambda c, e=effort: run_once(url, e, 256, cache=c))
            assert again == 0, f"{effort}: a fully cached re-run made {again} calls"
            serial_text = speed = "-"
            if serial:
                _, serial_wall, _ = run_once(url, effort, concurrency=1)
                serial_text, speed = f"{serial_wall:8.1f}", f"{serial_wall / wall:6.1f}x"
            print(
                f"{effort:<7} {calls:>5}  {depth:>5}  {wall:8.2f}  {ratio:20.2f}  {again:>19}"
                f"  {serial_text:>10}  {speed:>8}"
            )
    try:
        workload(latency, serial, budget, show_levels)
        evaluation(latency, contexts, serial, budget, max_tests)
        chain(latency)
    finally:
        shutil.rmtree(contexts, ignore_errors=True)


def speech_tag_prompt() -> tuple[Path, str]:
    corpus = SPEECH_TAG / "speech-tag.prompty"
    if corpus.is_file():
        return corpus, "PromptPex's speech-tag sample (../shared/corpus)"
    return WORD_TAG, "bench/fixtures/word-tag.prompty (shaped like PromptPex's speech-tag)"


def workload(latency: float, serial: bool, budget: float, show_levels: bool) -> None:
    prompt, where = speech_tag_prompt()
    print()
    print(f"speech-tag workload: {where}, generation and evaluation in one run:")
    print(
        '--models "mut-a;mut-b" --eval-models "judge-a;judge-b" --runs-per-test 2 '
        f"--groundtruth-model gt-model; {GT_LOW_SHARE:.0%} of groundtruth answers judged "
        "below the threshold"
    )
    print(
        "effort  tests  calls  levels  declared  wall (s)  wall/(levels*latency)"
        "  cached re-run calls  serial (s)  speed-up"
    )
    for effort in ("min", "medium"):
        with fake_server(latency, pipeline=True, groundtruth_low_share=GT_LOW_SHARE) as url:
            ctx, wall, cfg, spans = workload_once(url, prompt, effort, concurrency=4096)
            measured, rows = levels(spans)
            again = cached_rerun_calls(
                url, lambda c, e=effort: workload_once(url, prompt, e, 4096, cache=c)
            )
            assert again == 0, f"{effort}: a fully cached re-run made {again} calls"
            serial_text = speed = "-"
            calls = len(spans)
            if serial and calls * latency / 4 <= budget:
                _, serial_wall, _, _ = workload_once(url, prompt, effort, concurrency=1)
                serial_text, speed = f"{serial_wall:8.1f}", f"{serial_wall / wall:6.1f}x"
        ratio = wall / (measured * latency)
        print(
            f"{effort:<7} {len(ctx.tests):>5}  {calls:>5}  {measured:>6}  {critical_path(cfg):>8}"
            f"  {wall:8.2f}  {ratio:21.2f}  {again:>19}  {serial_text:>10}  {speed:>8}"
        )
        if show_levels:
            for row in rows:
                print(
                    f"    {row.stage:<16} {row.calls:>5} calls  levels {row.first}-{row.last}"
                    f" ({row.levels})"
                )


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
        "for a gateway slot [the gateway's own: from 8 per model, see --chain];\n no response "
        "cache, context saves not "
        "timed; a fresh fake server per evaluation; overhead = (wall - rounds*latency) / calls;\n"
        " each run is judged as soon as it finishes, so the runs stage includes most judging)"
    )
    print(
        "effort     tests  calls  rounds  wall (s)  wall/(rounds*latency)  serial (s)  speed-up"
        "  overhead/call  stages (s)"
    )
    base: dict[str, Any] = {**EVALUATION}
    if max_tests is not None:
        base["max_tests_to_run"] = max_tests
    with fake_server(latency, pipeline=True) as url:  # warm up the evaluation code paths
        evaluate_once(url, contexts / "min" / "context.json", {**base, **GROUNDTRUTH}, None)
    skipped = []
    for effort in EFFORTS:
        for label, cli in ((effort, base), (f"{effort}+gt", {**base, **GROUNDTRUTH})):
            context = contexts / effort / "context.json"
            # A fresh server per evaluation: the fake responder's bookkeeping grows with
            # every call it has answered (PipelineResponder.seen).
            with fake_server(latency, pipeline=True) as url:
                ctx, wall, cfg, calls = evaluate_once(url, context, cli, None)
            rounds = evaluation_rounds(cfg)
            ratio = wall / (rounds * latency)
            overhead = (wall - rounds * latency) / calls * 1000
            tests = len(eval_tests(ctx, cfg))
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


@contextmanager
def mockllm(latency: float) -> Iterator[str]:
    """../shared/tools/mockllm.py at `latency`, in its own process; yields its URL."""
    proc = subprocess.Popen(
        [sys.executable, str(MOCKLLM), "--latency", str(latency)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    try:
        yield f"http://127.0.0.1:{proc.stdout.readline().split()[-1]}/v1"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def at_defaults(
    url: str, prompt: Path, effort: str, spans: list | None = None
) -> tuple[Context, float, RunConfig, Limits]:
    """The speech-tag workload as `workload_once` runs it, with the gateway's own limits
    (no --concurrency: each model starts at 8 and adapts) and no response cache."""
    options = Options(
        effort=effort,
        # named, as mockllm serves several models (an unnamed role would exit 2)
        models=Models(
            api_base=url,
            rules_model=ROLE_MODEL,
            eval_model=ROLE_MODEL,
            **EVALUATION,
            **GROUNDTRUTH,
        ),
        evaluation=Evaluation(runs_per_test=2),
        run=Run(fresh=True, cache=False),
    )
    with tempfile.TemporaryDirectory() as tmp:
        options.run.out = Path(tmp) / "out"
        prepared = _prepare(prompt, options, Path(tmp))
        ctx, wall, _, limits = asyncio.run(_timed(prepared, None, spans))
    unfinished = [n for n, r in ctx.stages.items() if r.status != "done"]
    assert not unfinished, f"stages did not finish: {unfinished}"
    return ctx, wall, prepared.cfg, limits


def chain(latency: float, effort: str = "medium") -> None:
    prompt, where = speech_tag_prompt()
    print()
    print(
        f"the chain at the gateway's defaults: {where} at {effort}, with evaluation and "
        "groundtruth as above;\nno --concurrency: a model's limit starts at 8 and grows "
        "while the server takes the calls (both servers take every call)"
    )
    print(
        "server                 tests  calls  declared  x latency  wall (s)  wall/declared"
        "  waited for a slot  peak in flight"
    )
    servers: list[tuple[str, Any]] = [
        (
            f"fake, {latency * 1000:.0f} ms",
            lambda: fake_server(latency, pipeline=True, groundtruth_low_share=GT_LOW_SHARE),
        )
    ]
    if MOCKLLM.is_file():
        servers.append((f"mockllm --latency {latency:g}", lambda: mockllm(latency)))
    else:
        print(f"(mockllm not found at {MOCKLLM}: its row is skipped)")
    for label, server in servers:
        spans: list = []
        with server() as url:
            ctx, wall, cfg, limits = at_defaults(url, prompt, effort, spans)
        declared = critical_path(cfg)
        measured, _ = levels(spans)
        models = limits.limiters()
        waited = sum(m.waited for m in models.values())
        waits = sum(m.waits for m in models.values())
        calls = sum(m.calls for m in models.values())
        print(
            f"{label:<22} {len(ctx.tests):>5}  {calls:>5}  {declared:>8}"
            f"  {declared * latency:9.2f}  {wall:8.2f}"
            f"  {wall / (declared * latency):13.2f}  {waited:7.1f} s, {waits:>4}"
            f"  {limits.peak_in_flight:>14}"
        )
        print(
            f"    the run's own chain: {measured} levels (bench/levels.py), wall / (levels x "
            f"latency) {wall / (measured * latency):.2f}"
        )
        for model, m in models.items():
            print(
                f"    {model:<16} {m.calls:>5} calls  {m.waits:>4} waited {m.waited:7.1f} s"
                f"  peak {m.peak_in_flight:>4} in flight  limit 8 -> {m.limit} (peak"
                f" {m.peak_limit}, ceiling {m.ceiling})  429s {m.rate_limits}"
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
    parser.add_argument(
        "--vs-serial", action="store_true", help="also run the work at concurrency 1"
    )
    parser.add_argument(
        "--serial-budget",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="run a concurrency-1 comparison only when expected to take at most this [60]",
    )
    parser.add_argument(
        "--levels", action="store_true", help="print the levels each stage's calls occupy"
    )
    parser.add_argument(
        "--max-tests-to-run",
        type=int,
        default=None,
        metavar="N",
        help="tests per evaluation [the effort's maxTestsToRun: 10, 30, 100, all]",
    )
    parser.add_argument("--skip-startup", action="store_true", help="skip the start-up figures")
    parser.add_argument("--local", action="store_true", help="also time the embedded model")
    parser.add_argument(
        "--chain", action="store_true", help="only the chain at the gateway's defaults"
    )
    args = parser.parse_args()
    if args.chain:
        chain(args.latency)
        return
    if not args.skip_startup:
        figures = startup.report(repeat=5)
        print(f"  (target: first request within 0.4 s; {figures['first_call']:.3f} s)\n")
    remote(
        args.latency,
        serial=args.vs_serial,
        budget=args.serial_budget,
        max_tests=args.max_tests_to_run,
        show_levels=args.levels,
    )
    if args.local:
        local()


if __name__ == "__main__":
    main()
