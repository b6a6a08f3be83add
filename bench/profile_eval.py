"""Where the evaluation phase spends CPU: the client (this process) and the fake server.

Generates one effort's context against the fake server (as bench/pipeline.py does),
then evaluates it as `promptgen context.json --models "mut-a;mut-b" --eval-models
"judge-a;judge-b" --runs-per-test 2 [--groundtruth-model gt-model]` would (no response
cache), and prints the wall time, the CPU time of the client and of the server process
(per call), and the load average. With --profile, the client's hottest functions
(cProfile, cumulative and own time) are printed, or written to a file with --out.

    python bench/profile_eval.py [--effort high] [--no-gt] [--latency 0.3]
                                 [--repeat 1] [--profile [--top 40] [--out FILE]]
                                 [--threaded-server]
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import os
import pstats
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.gateway import fake_server_process
from bench.pipeline import EVALUATION, GROUNDTRUTH, evaluate_once, evaluation_rounds, run_once
from promptgen import save_context

THREADS = False  # --threaded-server


@contextmanager
def server(latency: float) -> Iterator[tuple[str, int]]:
    """The bench's fake server (its own process); yields its URL and process id, so its
    CPU time can be read from /proc. THREADS: the tests' threaded server instead."""
    with fake_server_process(latency, pipeline=True, threads=THREADS) as found:
        yield found


def cpu_of(pid: int) -> float:
    """User + system CPU seconds of a process (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def generate(effort: str, latency: float, folder: Path) -> Path:
    with server(latency) as (url, _):
        ctx, _, _ = run_once(url, effort, concurrency=256)
    path = folder / "context.json"
    save_context(ctx, path)
    return path


class GcClock:
    """CPU time the cyclic garbage collector takes (cProfile charges it to whichever
    function happened to allocate when a collection started)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.collections = [0, 0, 0]
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.process_time()
        else:
            self.seconds += time.process_time() - self._started
            self.collections[info["generation"]] += 1


def measure(context: Path, given: dict[str, Any], latency: float, profiler: Any) -> None:
    clock = GcClock()
    with server(latency) as (url, pid):
        gc.callbacks.append(clock)
        server_before, client_before = cpu_of(pid), time.process_time()
        if profiler is not None:
            profiler.enable()
        _, wall, cfg, calls = evaluate_once(url, context, given, None)
        if profiler is not None:
            profiler.disable()
        client = time.process_time() - client_before
        served = cpu_of(pid) - server_before
        gc.callbacks.remove(clock)
    rounds = evaluation_rounds(cfg)
    print(
        f"{calls:>5} calls  {rounds} rounds  wall {wall:5.2f} s "
        f"({wall / (rounds * latency):4.2f}x the critical path)  "
        f"client CPU {client:5.2f} s = {client / calls * 1000:5.2f} ms/call  "
        f"server CPU {served:5.2f} s = {served / calls * 1000:5.2f} ms/call  "
        f"load {os.getloadavg()[0]:.2f}"
    )
    print(
        f"      of the client CPU, garbage collection {clock.seconds:5.2f} s "
        f"({'/'.join(map(str, clock.collections))} collections of generations 0/1/2)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--effort", default="high", choices=("min", "low", "medium", "high"))
    parser.add_argument("--no-gt", action="store_true", help="without --groundtruth-model")
    parser.add_argument("--latency", type=float, default=0.3)
    parser.add_argument("--repeat", type=int, default=1, help="evaluations measured [1]")
    parser.add_argument("--profile", action="store_true", help="cProfile the client")
    parser.add_argument("--top", type=int, default=40, help="functions printed [40]")
    parser.add_argument("--out", type=Path, help="write the profile here instead")
    parser.add_argument(
        "--threaded-server", action="store_true", help="the tests' threaded fake server"
    )
    args = parser.parse_args()
    global THREADS
    THREADS = args.threaded_server
    given = {**EVALUATION} if args.no_gt else {**EVALUATION, **GROUNDTRUTH}
    folder = Path(tempfile.mkdtemp(prefix="profile-eval-"))
    try:
        context = generate(args.effort, args.latency, folder)
        with server(args.latency) as (url, _):  # warm up: imports, first code paths
            evaluate_once(url, context, given, None)
        profiler = cProfile.Profile() if args.profile else None
        for _ in range(args.repeat):
            measure(context, given, args.latency, profiler)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if profiler is None:
        return
    if args.out:
        profiler.dump_stats(args.out)
        return
    stats = pstats.Stats(profiler).strip_dirs()
    stats.sort_stats("cumulative").print_stats(args.top)
    stats.sort_stats("tottime").print_stats(args.top)


if __name__ == "__main__":
    main()
