"""The embedded models at this machine's limit: how far a run is from what the cores can do.

For the README's first command (`promptgen samples/classify-sentiment.prompty --effort
min --models local/qwen2.5-coder-0.5b`: rules and tests by the 1.5B model, runs on the
0.5B) and, with `--samples`, for every sample's generation (`--effort min` on the 1.5B
model, no runs, as `bench/quality.py --local --phase generate` times it), printed:

- per stage: calls, prompt tokens, prompt tokens reused (the prefix llama.cpp kept from
  the model's previous call, `Usage.cached_tokens`), generated tokens, and call seconds
  (the calls' summed latency, waits on the model included);
- per embedded model: this machine's prefill and decode rates (tokens/s, best of 3:
  a fixed calibration prompt of 512 tokens read from a clean state; 128 tokens decoded
  after a short prompt, without grammar, temperature 0), measured in a process of their
  own with the settings promptgen loads the model with, and the run's tokens on it;
- the wall time of the CLI process, the limit (over models: prompt tokens not reused /
  prefill rate + generated tokens / decode rate) and `ratio <wall / limit>`.

Every run is the CLI in its own process, timed from outside, from a warm install (the
weights already assembled) and a cold response cache (a temp cache folder whose models
are the installed ones). Offline: the weights come from installed packages.

    python bench/local.py --readme            # the README's first command; ends `ratio R`
    python bench/local.py --samples           # every sample's generation
    python bench/local.py --samples haiku summarize
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

README_COMMAND = [
    "samples/classify-sentiment.prompty",
    "--effort",
    "min",
    "--models",
    "local/qwen2.5-coder-0.5b",
]
GENERATION_MODEL = "local/qwen2.5-coder-1.5b"  # bench/quality.py --local
PREFIX = "local/"
CALIBRATION_TOKENS = 512
DECODE_TOKENS = 128
REPEATS = 3
# A fixed text for the prefill calibration (cut to CALIBRATION_TOKENS tokens).
CALIBRATION_TEXT = (
    "A support team sorts every incoming message before anyone reads it. Each message is "
    "labelled positive, negative, neutral or mixed, with a one-line reason that quotes the "
    "words the label rests on. Messages in other languages are labelled the same way. "
    "Sarcasm counts as negative when the literal words praise what the writer complains "
    "about. A message that only asks a question is neutral unless it also says how the "
    "writer feels. Order numbers, names and addresses are never repeated in the reason. "
)
DECODE_PROMPT = "Write the numbers from one to two hundred in words, one per line:\n"


@dataclass(frozen=True)
class Rates:
    """One embedded model's measured rates on this machine, in tokens per second."""

    prefill: float
    decode: float
    threads: int = 0  # the threads promptgen computes with (physical cores)
    prefill_one: float = 0.0  # the same rates at one thread
    decode_one: float = 0.0


@dataclass(frozen=True)
class Row:
    """One stage's (or model's) usage as context.json records it."""

    name: str
    calls: int
    prompt_tokens: int
    cached_tokens: int
    completion_tokens: int
    seconds: float

    @classmethod
    def of(cls, name: str, usage: dict[str, Any]) -> Row:
        return cls(
            name=name,
            calls=int(usage.get("calls", 0)),
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            cached_tokens=int(usage.get("cached_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
            seconds=float(usage.get("latency_ms", 0.0)) / 1000,
        )

    @property
    def read(self) -> int:
        """Prompt tokens the model had to read (not reused)."""
        return self.prompt_tokens - self.cached_tokens


# --- the arithmetic -------------------------------------------------------------------


def stage_rows(context: dict[str, Any]) -> list[Row]:
    """Each stage's usage, in the order the run recorded them."""
    by_stage = context.get("usage", {}).get("by_stage", {})
    return [Row.of(name, usage) for name, usage in by_stage.items()]


def model_rows(context: dict[str, Any]) -> list[Row]:
    by_model = context.get("usage", {}).get("by_model", {})
    return [Row.of(name, usage) for name, usage in sorted(by_model.items())]


def model_limit(row: Row, rates: Rates) -> float:
    """Seconds the model needs at its measured rates: the prompt tokens it reads, then
    the tokens it generates."""
    return row.read / rates.prefill + row.completion_tokens / rates.decode


def limit(context: dict[str, Any], rates: dict[str, Rates]) -> float:
    """The run's limit: the sum over its embedded models (models without rates, remote
    ones, are left out)."""
    return sum(
        model_limit(row, rates[row.name.removeprefix(PREFIX)])
        for row in model_rows(context)
        if row.name.removeprefix(PREFIX) in rates
    )


def report(title: str, wall: float, context: dict[str, Any], rates: dict[str, Rates]) -> str:
    """The printed figures of one run, ending with its `ratio` line."""
    lines = [f"## {title}", ""]
    head = "| stage | calls | prompt tokens | reused | reused % | generated | call s |"
    lines += [head, "|---|---|---|---|---|---|---|"]
    for row in [*stage_rows(context), Row.of("**all**", context.get("usage", {}).get("total", {}))]:
        share = 100 * row.cached_tokens / row.prompt_tokens if row.prompt_tokens else 0.0
        lines.append(
            f"| {row.name} | {row.calls} | {row.prompt_tokens} | {row.cached_tokens} | "
            f"{share:.0f} | {row.completion_tokens} | {row.seconds:.0f} |"
        )
    lines += [
        "",
        "| model | prefill tok/s | decode tok/s | prompt tokens read | generated | limit s |",
        "|---|---|---|---|---|---|",
    ]
    for row in model_rows(context):
        rate = rates.get(row.name.removeprefix(PREFIX))
        if rate is None:
            continue
        lines.append(
            f"| {row.name} | {rate.prefill:.1f} | {rate.decode:.1f} | {row.read} | "
            f"{row.completion_tokens} | {model_limit(row, rate):.0f} |"
        )
    for name, rate in sorted(rates.items()):
        if rate.threads > 1 and rate.prefill_one and rate.decode_one:
            lines.append(
                f"threads: local/{name} at {rate.threads} (physical cores) reads "
                f"{rate.prefill / rate.prefill_one:.2f}x and writes "
                f"{rate.decode / rate.decode_one:.2f}x as fast as at 1 "
                f"({rate.prefill_one:.1f} and {rate.decode_one:.1f} tok/s)"
            )
    bound = limit(context, rates)
    lines += ["", f"wall {wall:.0f} s, limit {bound:.0f} s"]
    lines.append(f"ratio {wall / bound:.2f}" if bound > 0 else "ratio -")
    return "\n".join(lines)


# --- calibration ----------------------------------------------------------------------


def calibrate(name: str) -> Rates:
    """The model's prefill and decode rates, best of REPEATS, as promptgen loads it (one
    thread per physical core), and at one thread: what the cores add."""
    from promptgen.llm.local import load_model

    llama = load_model(name)
    llama.cores = None  # this calibration sets the threads itself
    cores = llama.threads
    prefill, decode = rates_at(llama, cores)
    prefill_one, decode_one = rates_at(llama, 1) if cores > 1 else (prefill, decode)
    return Rates(prefill, decode, cores, prefill_one, decode_one)


def rates_at(llama: Any, threads: int) -> tuple[float, float]:
    """Prefill and decode tokens/s of `llama` computing with `threads` threads."""
    import llama_cpp

    from promptgen.llm.local import perf

    llama_cpp.llama_set_n_threads(llama._ctx.ctx, threads, threads)
    llama.threads = threads
    text = CALIBRATION_TEXT
    tokens = llama.tokenize(text.encode())
    while len(tokens) < CALIBRATION_TOKENS:
        text += CALIBRATION_TEXT
        tokens = llama.tokenize(text.encode())
    tokens = tokens[:CALIBRATION_TOKENS]
    prefill = decode = 0.0
    for _ in range(REPEATS):
        llama.reset()  # a clean state: nothing of the last prompt is kept
        before = perf(llama)
        llama.eval(tokens)
        after = perf(llama)
        # every token is read (llama.cpp's counter says one fewer from a clean state)
        prefill = max(prefill, len(tokens) / ((after.prompt_ms - before.prompt_ms) / 1000))
        llama.reset()
        before = perf(llama)
        llama.create_completion(DECODE_PROMPT, max_tokens=DECODE_TOKENS, temperature=0.0, seed=0)
        after = perf(llama)
        decoded = after.decoded - before.decoded
        decode = max(decode, decoded / ((after.decode_ms - before.decode_ms) / 1000))
    llama.reset()
    return prefill, decode


def measured_rates(names: list[str]) -> dict[str, Rates]:
    """The rates of `names`, measured in a process of their own (the run's memory is
    then the run's alone)."""
    proc = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--calibrate", *names],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=True,
    )
    found = json.loads(proc.stdout.strip().splitlines()[-1])
    return {name: Rates(**value) for name, value in found.items()}


# --- the timed runs -------------------------------------------------------------------


def cold_cache() -> Path:
    """A fresh cache folder whose `models` is the installed one (warm install, cold
    response cache)."""
    from promptgen.llm.weights import cache_root

    folder = Path(tempfile.mkdtemp(prefix="promptgen-local-bench-"))
    models = cache_root() / "models"
    models.mkdir(parents=True, exist_ok=True)
    (folder / "models").symlink_to(models, target_is_directory=True)
    return folder


def timed_run(args: list[str], out: Path) -> tuple[float, dict[str, Any]]:
    """Wall seconds of `promptgen ARGS --out OUT` and the context it wrote; the process's
    peak resident memory is printed."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["PROMPTGEN_CACHE_DIR"] = str(cold_cache())
    with tempfile.TemporaryFile("w+") as log:
        start = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "promptgen", *args, "--out", str(out)],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=REPO,
        )
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode not in (0, 1):  # 1: a gate failed, the run itself is whole
            log.seek(0)
            tail = log.read().strip().splitlines()[-3:]
            raise SystemExit(f"promptgen exited {proc.returncode}: " + " / ".join(tail))
    print(f"# peak memory: {usage.ru_maxrss / 1024**2:.1f} GB", flush=True)  # ru_maxrss: KB
    return wall, json.loads((out / "context.json").read_text())


def sample_prompts(names: list[str]) -> list[tuple[Path, str]]:
    from bench.quality import samples

    return samples(names)


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f} on {os.cpu_count()} cores"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--readme", action="store_true", help="the README's first command")
    parser.add_argument("--samples", nargs="*", help="every sample's generation (or those named)")
    parser.add_argument("--calibrate", nargs="+", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help="keep the runs here (default: a temp dir)")
    args = parser.parse_args()
    if args.calibrate:
        print(json.dumps({name: asdict(calibrate(name)) for name in args.calibrate}))
        return
    if not args.readme and args.samples is None:
        parser.error("say --readme, --samples, or both")

    from promptgen.llm.weights import SPECS

    out = args.out or Path(tempfile.mkdtemp(prefix="promptgen-local-bench-out-"))
    print(f"# before: {load_average()}", flush=True)
    rates = measured_rates(sorted(SPECS))
    print(f"# calibrated: {load_average()}", flush=True)
    if args.samples is not None:
        for prompt, name in sample_prompts(args.samples):
            command = [str(prompt), "--effort", "min", "--rules-model", GENERATION_MODEL]
            command += ["--eval-model", GENERATION_MODEL]
            wall, context = timed_run(command, out / name)
            print(report(f"{name}: generation", wall, context, rates) + "\n", flush=True)
    if args.readme:
        wall, context = timed_run(README_COMMAND, out / "readme")
        print(f"# after: {load_average()}", flush=True)
        print(report("promptgen " + " ".join(README_COMMAND), wall, context, rates))


if __name__ == "__main__":
    main()
