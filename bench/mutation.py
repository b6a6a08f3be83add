"""Mutation-score benchmark: for every sample prompt, the main run at `--effort min`
with the embedded model under test, then `promptgen mutate`, offline. Prints per
sample: mutants (live, equivalent), killed, survived, the mutation score and the
survivors' operators. Slow (minutes per sample on 2 cores): not run in CI.

    python bench/mutation.py [--limit N] [--mutants 6] [--llm-mutants 2]
                             [--model local/qwen2.5-coder-0.5b] [--out DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from promptgen import Models, Options, Run, prepare
from promptgen.errors import PromptgenError
from promptgen.mutate import MutationSettings, mutate_async

MODEL = "local/qwen2.5-coder-0.5b"
SAMPLES = sorted(
    p
    for pattern in ("*.prompty", "*.prompt.yml", "*.md", "*.txt")
    for p in (REPO / "samples").glob(pattern)
    if p.name != "README.md"
)


async def one(sample: Path, args: argparse.Namespace, out: Path) -> str:
    options = Options(
        effort="min", models=Models(models=[args.model]), run=Run(out=out / sample.stem)
    )
    settings = MutationSettings(max_mutants=args.mutants, llm_mutants=args.llm_mutants)
    started = time.perf_counter()
    try:
        ctx, _ = await mutate_async(prepare(sample, options), settings)
    except PromptgenError as err:
        return f"{sample.name:<40} error: {err.one_line()}"
    state = ctx.mutation
    assert state is not None
    status = Counter(v.status for v in state.verdicts)
    survivors = Counter(
        m.operator for m in state.mutants
        for v in state.verdicts if v.mutant_id == m.id and v.status == "survived"
    )  # fmt: skip
    score = state.score.percent
    shown = "-" if score is None else f"{score:.0f}%"
    return (
        f"{sample.name:<40} mutants {len(state.mutants):>3} (equivalent "
        f"{status['equivalent']}) killed {status['killed']:>3} survived {status['survived']:>3} "
        f"score {shown:>5}  survivors {dict(survivors)}  {time.perf_counter() - started:.0f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=None, help="Only the first N samples.")
    parser.add_argument("--mutants", type=int, default=6)
    parser.add_argument("--llm-mutants", type=int, default=2)
    parser.add_argument("--model", default=MODEL)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="promptgen-mutation-"))
    print(f"mutation score, {args.model} under test, output in {out}", flush=True)
    for sample in SAMPLES[: args.limit]:
        print(asyncio.run(one(sample, args, out)), flush=True)


if __name__ == "__main__":
    main()
