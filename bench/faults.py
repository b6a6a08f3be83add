"""Fault benchmark: the whole pipeline against the independent mock server
(../shared/tools/mockllm.py) with 20 % mixed faults, and against a server that answers
nothing but the schema (`--literal 1`).

With faults, the same run is repeated (as a user re-runs the command) until nothing is
left to do, at most --attempts times. Prints, per attempt: wall time, requests the
server saw, faults it injected by kind; then what the user reads: cells planned and
recorded (items lost), runs flagged as empty or cut off, runs judged, and whether any
judged output was a faulty one (corrupted silently: must be 0).

    python bench/faults.py [--effort low] [--latency 0.05] [--attempts 4] [--sample NAME]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import promptgen
from promptgen import Evaluation, Models, Options, Run
from promptgen.api import gateway_settings
from promptgen.options import Generation
from promptgen.pipeline import unfinished
from promptgen.selection import eval_tests

MOCK = REPO.parent / "shared" / "tools" / "mockllm.py"
FAULTS = {"429": 0.03, "500": 0.03, "503": 0.03, "garbage": 0.04, "empty": 0.04, "reset": 0.03}


def start(*args: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([sys.executable, str(MOCK), *args], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    port = proc.stdout.readline().split()[-1]
    return proc, f"http://127.0.0.1:{port}"


def stats(base: str) -> dict:  # type: ignore[type-arg]
    with urllib.request.urlopen(f"{base}/stats", timeout=10) as reply:
        return json.loads(reply.read())


def options(effort: str, url: str, out: Path) -> Options:
    return Options(
        effort=effort,
        generation=Generation(baseline_tests=True),
        evaluation=Evaluation(groundtruth=True),
        # The mock serves several models: every role is named (the id it was sent before).
        models=Models(
            models=["mock-small", "mock-large"],
            api_base=f"{url}/v1",
            **dict.fromkeys(("rules_model", "eval_model", "baseline_model"), "openai/default"),
            groundtruth_model="openai/default",
        ),
        run=Run(out=out, cache=False),
    )


def run_once(sample: Path, opts: Options, tmp: Path) -> tuple[float, promptgen.Context, object]:
    settings = gateway_settings(opts, env={}, cwd=tmp)
    prepared = promptgen.prepare(sample, opts, settings=settings)
    started = time.perf_counter()
    ctx = promptgen.run(prepared)
    return time.perf_counter() - started, ctx, prepared.cfg


def faults(args: argparse.Namespace, sample: Path, tmp: Path) -> None:
    flags = [f"--fail-{k}={v}" for k, v in FAULTS.items()]
    proc, base = start(*flags, "--latency", str(args.latency), "--seed", "7")
    print(f"20 % mixed faults ({', '.join(f'{k} {v:.0%}' for k, v in FAULTS.items())}),")
    print(f"{sample.name}, effort {args.effort}, 2 models, groundtruth, baseline:")
    try:
        seen: Counter[str] = Counter()
        for attempt in range(1, args.attempts + 1):
            wall, ctx, cfg = run_once(sample, options(args.effort, base, tmp / "out"), tmp)
            now = stats(base)
            injected = Counter(now["faults"]) - seen
            seen = Counter(now["faults"])
            left = unfinished(ctx, cfg, "generation") + unfinished(ctx, cfg, "evaluation")
            flagged = dict(Counter(r.fault for r in ctx.test_runs if r.fault))
            print(
                f"  attempt {attempt}: {wall:6.2f} s, {now['requests_total']:5d} requests in all, "
                f"faults injected {dict(injected)}; runs flagged empty/truncated {flagged or 0}; "
                f"unfinished: {', '.join(left) or 'none'}"
            )
            if not left:
                break
        tests = eval_tests(ctx, cfg)
        planned = len(tests) * len(cfg.models) * cfg.ev.runs_per_test
        flagged = dict(Counter(r.fault for r in ctx.test_runs if r.fault))
        judged = [r for r in ctx.test_runs if r.metrics]
        silent = sum(1 for r in judged if r.fault or not (r.output or "").strip())
        print(
            f"  cells planned {planned}, recorded {len(ctx.test_runs)}, "
            f"lost {planned - len({(r.test_id, r.model, r.run_index) for r in ctx.test_runs})}"
        )
        print(
            f"  runs flagged as faulty now: {flagged or 0}; runs judged: {len(judged)}; "
            f"faulty outputs judged as real: {silent}"
        )
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def literal(args: argparse.Namespace, sample: Path, tmp: Path) -> None:
    proc, base = start("--literal", "1", "--latency", str(args.latency))
    try:
        wall, ctx, cfg = run_once(sample, options(args.effort, base, tmp / "literal"), tmp)
        left = unfinished(ctx, cfg, "generation") + unfinished(ctx, cfg, "evaluation")
        origins = Counter(t.origin for t in ctx.tests)
        print(
            f"schema-literal server (--literal 1): {wall:.2f} s, unfinished: "
            f"{', '.join(left) or 'none'}; rules {len(ctx.rules)}, inverse rules "
            f"{len(ctx.inverse_rules)}, tests {dict(origins)}, runs {len(ctx.test_runs)}, "
            f"rules short of testsPerRule: {len(ctx.stage('tests').notes)}"
        )
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--effort", default="low")
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--attempts", type=int, default=4)
    parser.add_argument("--sample", default="classify-sentiment.prompty")
    args = parser.parse_args()
    if not MOCK.is_file():
        sys.exit(f"mock server not found at {MOCK} (it lives in ../shared/tools)")
    sample = REPO / "samples" / args.sample
    with tempfile.TemporaryDirectory() as tmp:
        faults(args, sample, Path(tmp))
        literal(args, sample, Path(tmp))


if __name__ == "__main__":
    main()
