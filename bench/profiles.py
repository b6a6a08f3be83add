"""Provider profiles benchmark: every sample at every effort against a server that
refuses what each provider family refuses in structured output (tests/enforcing.py,
the rules of promptgen/llm/profiles.py), the whole pipeline with baseline tests,
groundtruth, the review and one model under test.

Each profile is reached as a user would: a model id that names it (`azure/gpt-4o`,
`anthropic/claude-...`, `ft:...`, ...) for every role, at an `--api-base` (OpenAI's own
rules at a server that is not api.openai.com need `--provider-profile openai`). Prints
profile x sample x effort -> requests the server received, requests it refused (must be
0) and stages that did not finish; exits 1 if any request was refused.

    python bench/profiles.py [--profiles azure,anthropic] [--efforts min,low]
                             [--samples haiku.md,...] [--no-evals]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import promptgen
from promptgen import Evaluation, Models, Options, Run
from promptgen.llm.profiles import PROFILES
from promptgen.options import EFFORTS, Generation
from tests.enforcing import MODEL_OF
from tests.fakellm import FakeLLM
from tests.pipeline_fake import PipelineResponder

SAMPLES = sorted(
    p.name
    for p in (REPO / "samples").iterdir()
    if p.suffix in (".prompty", ".md", ".txt", ".yml") and ".metric." not in p.name
    if p.name != "README.md" and not p.name.endswith(".instructions.txt")
)


def one_run(profile: str, sample: str, effort: str, out: Path, evals: bool) -> tuple[int, int, int]:
    """(requests, refused, stages not done) of one run against the profile's server."""
    model, chosen = MODEL_OF[profile]
    with FakeLLM(responder=PipelineResponder(), profile=profile) as fake:
        options = Options(
            effort=effort,
            generation=Generation(baseline_tests=True, rate_tests=True, filter_tests=5),
            evaluation=Evaluation(groundtruth=evals, keep_unsafe=True),
            models=Models(
                models=[model] if evals else [],
                rules_model=model,
                eval_model=model,
                baseline_model=model,
                groundtruth_model=model if evals else None,
                api_base=fake.url,
                **({"provider_profile": chosen} if chosen else {}),
            ),
            run=Run(out=out, cache=False),
        )
        prepared = promptgen.prepare(REPO / "samples" / sample, options)
        ctx = promptgen.run(prepared, save=False)
        left = sum(1 for r in ctx.stages.values() if r.status not in ("done", "skipped"))
        return len(fake.requests), len(fake.refused), left


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profiles", default=",".join(PROFILES))
    parser.add_argument("--efforts", default=",".join(EFFORTS))
    parser.add_argument("--samples", default=",".join(SAMPLES))
    parser.add_argument("--no-evals", action="store_true", help="generate tests only")
    args = parser.parse_args()
    profiles = args.profiles.split(",")
    efforts = args.efforts.split(",")
    samples = args.samples.split(",")
    started = time.perf_counter()
    width = max(len(s) for s in samples) + 7
    print(f"{'requests/refused':<{width}} " + " ".join(f"{p:>10}" for p in profiles))
    totals = {p: [0, 0, 0] for p in profiles}
    with tempfile.TemporaryDirectory() as tmp:
        for sample in samples:
            for effort in efforts:
                cells = []
                for profile in profiles:
                    out = Path(tmp) / profile / sample / effort
                    requests, refused, left = one_run(
                        profile, sample, effort, out, not args.no_evals
                    )
                    for i, n in enumerate((requests, refused, left)):
                        totals[profile][i] += n
                    mark = f" {left}!" if left else ""
                    cells.append(f"{requests}/{refused}{mark}")
                label = f"{sample} {effort}"
                print(f"{label:<{width}} " + " ".join(f"{c:>10}" for c in cells), flush=True)
    print(f"{'total':<{width}} " + " ".join(f"{f'{r}/{x}':>10}" for r, x, _ in totals.values()))
    runs = len(samples) * len(efforts)
    unfinished = sum(t[2] for t in totals.values())
    refused = sum(t[1] for t in totals.values())
    print(
        f"{runs * len(profiles)} runs in {time.perf_counter() - started:.0f} s: "
        f"{refused} requests refused, {unfinished} stages not finished"
    )
    return 1 if refused else 0


if __name__ == "__main__":
    sys.exit(main())
