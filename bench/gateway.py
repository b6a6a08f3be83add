"""Gateway benchmark: overhead per call, throughput, achieved concurrency, local tokens/s.

Runs against the fake OpenAI-compatible server on 127.0.0.1 (no network). Prints figures.

    python bench/gateway.py [--calls 300] [--skip-local]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from promptgen.llm import LLM, bounded_gather, load_settings


@contextmanager
def server_process(module: str, *args: str) -> Iterator[tuple[str, int]]:
    """A fake server module run in its own process (it does not share the client's GIL):
    it prints its URL on its first line and stops when its stdin closes. Yields the URL
    and its process id (bench/profile_eval.py reads its CPU time)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", module, *args],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdin is not None
    try:
        yield proc.stdout.readline().strip(), proc.pid
    finally:
        proc.stdin.close()
        proc.wait(timeout=10)


@contextmanager
def fake_server_process(
    latency: float = 0.0,
    pipeline: bool = False,
    groundtruth_low_share: float | None = None,
    threads: bool = False,
) -> Iterator[tuple[str, int]]:
    """tests/fakellm.py in its own process; yields its URL and process id."""
    extra = ["--pipeline"] if pipeline else []
    if groundtruth_low_share is not None:
        extra += ["--groundtruth-low-share", str(groundtruth_low_share)]
    if threads:
        extra.append("--threads")
    with server_process("tests.fakellm", "--latency", str(latency), *extra) as served:
        yield served


@contextmanager
def fake_server(
    latency: float = 0.0, pipeline: bool = False, groundtruth_low_share: float | None = None
) -> Iterator[str]:
    """`fake_server_process`, yielding its URL."""
    with fake_server_process(latency, pipeline, groundtruth_low_share) as (url, _):
        yield url


def gateway(
    url: str, folder: Path, *, cache: bool, concurrency: int, via_litellm: bool = False
) -> LLM:
    if via_litellm:  # litellm's own provider routing, pointed at the fake server
        os.environ["OPENAI_API_BASE"] = url
        os.environ.setdefault("OPENAI_API_KEY", "sk-bench-not-a-key")
    settings = load_settings(
        {
            "api_base": None if via_litellm else url,
            "rules": "openai/bench",
            "cache": cache,
            "cache_dir": str(folder),
            "concurrency": concurrency,
        },
        env={},
        cwd=folder,
    )
    return LLM(settings)


def messages(i: int) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"question {i}"}]


async def sequential_ms(llm: LLM, n: int, same: bool = False) -> float:
    times = []
    for i in range(n):
        start = time.perf_counter()
        result = await llm.complete(messages(0 if same else i))
        assert result.ok, result.error
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


async def timed_gateway(llm: LLM, n: int, same: bool = False) -> float:
    await llm.complete(messages(0 if same else -1))  # warm up (and fill the cache)
    median = await sequential_ms(llm, n, same)
    await llm.aclose()
    return median


async def raw_sdk_ms(url: str, n: int) -> float:
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=url, api_key="none", max_retries=0)
    await client.chat.completions.create(model="bench", messages=messages(-1))  # type: ignore[arg-type]
    times = []
    for i in range(n):
        start = time.perf_counter()
        await client.chat.completions.create(model="bench", messages=messages(i))  # type: ignore[arg-type]
        times.append((time.perf_counter() - start) * 1000)
    await client.close()
    return statistics.median(times)


async def fan_out(llm: LLM, n: int) -> float:
    """Seconds to run n distinct calls at once (the gateway's limits apply)."""
    start = time.perf_counter()
    results = await bounded_gather([lambda i=i: llm.complete(messages(i)) for i in range(n)])
    assert all(r.ok for r in results)
    return time.perf_counter() - start


async def throughput(url: str, folder: Path, concurrency: int, n: int) -> float:
    llm = gateway(url, folder, cache=False, concurrency=concurrency)
    await fan_out(llm, concurrency)  # warm up (imports, connection pool)
    rate = n / await fan_out(llm, n)
    await llm.aclose()
    return rate


def remote_figures(calls: int) -> None:
    with fake_server() as url, tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        sdk = asyncio.run(raw_sdk_ms(url, calls))
        through = asyncio.run(
            timed_gateway(gateway(url, folder / "a", cache=False, concurrency=1), calls)
        )
        hit = asyncio.run(
            timed_gateway(gateway(url, folder / "b", cache=True, concurrency=1), calls, same=True)
        )
        routed = gateway(url, folder / "c", cache=False, concurrency=1, via_litellm=True)
        litellm_ms = asyncio.run(timed_gateway(routed, calls))
        print("gateway, fake server with 0 ms latency (medians):")
        print(f"  openai SDK call alone          {sdk:7.2f} ms")
        print(f"  gateway call, uncached         {through:7.2f} ms")
        print(f"  gateway overhead over the SDK  {through - sdk:7.2f} ms  (--api-base path)")
        print(f"  gateway cache hit              {hit:7.3f} ms")
        print(f"  gateway via litellm routing    {litellm_ms:7.2f} ms  (provider strings)")
        for c in (1, 8, 32):
            rate = asyncio.run(throughput(url, folder / f"t{c}", c, calls))
            print(f"  throughput at concurrency {c:>2}  {rate:7.0f} calls/s")
    with fake_server(latency=0.2) as url, tempfile.TemporaryDirectory() as tmp:
        print("achieved concurrency, fake server with 200 ms latency:")
        for c in (8, 32):
            n = c * 10
            llm = gateway(url, Path(tmp) / str(c), cache=False, concurrency=c)

            async def measure(llm: LLM = llm, c: int = c, n: int = n) -> float:
                await fan_out(llm, c)  # open the connection pool, as a long run would
                wall = await fan_out(llm, n)
                await llm.aclose()
                return wall

            wall = asyncio.run(measure())
            mean = n * 0.2 / wall
            print(
                f"  limit {c:>2}: mean in flight {mean:5.1f} ({100 * mean / c:4.0f}% of the "
                f"limit), {n} calls in {wall:.2f} s (ideal {n / c * 0.2:.2f} s)"
            )


def local_figures() -> None:
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        print("local model: llama-cpp-python not installed (skipped)")
        return
    from promptgen.llm.local import load_model
    from promptgen.llm.weights import SPECS, part_files

    print("embedded local model (llama.cpp, 2 threads):")
    prompt = "Summarise these rules for writing a haiku. " * 30
    for name, spec in SPECS.items():
        if part_files(spec) is None:
            print(f"  {name}: weights not installed (skipped)")
            continue
        start = time.perf_counter()
        model = load_model(name)
        load = time.perf_counter() - start
        model.cache = None  # no kept states: each timed call reads its prompt in full
        msgs = [{"role": "user", "content": prompt}]
        model.create_chat_completion(messages=msgs, max_tokens=1, temperature=0)  # warm
        model.reset()
        start = time.perf_counter()
        first = model.create_chat_completion(messages=msgs, max_tokens=1, temperature=0)
        t_prompt = time.perf_counter() - start
        n_prompt = first["usage"]["prompt_tokens"]
        model.reset()
        start = time.perf_counter()
        out = model.create_chat_completion(messages=msgs, max_tokens=128, temperature=0.7, seed=1)
        t_all = time.perf_counter() - start
        n_gen = out["usage"]["completion_tokens"]
        gen_rate = (n_gen - 1) / max(1e-9, t_all - t_prompt)
        print(
            f"  {name}: load {load:4.1f} s, prompt {n_prompt / t_prompt:6.1f} tok/s "
            f"({n_prompt} tokens), generation {gen_rate:5.1f} tok/s ({n_gen} tokens)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--skip-local", action="store_true")
    args = parser.parse_args()
    remote_figures(args.calls)
    if not args.skip_local:
        local_figures()


if __name__ == "__main__":
    main()
