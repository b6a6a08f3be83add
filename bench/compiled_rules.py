"""Compiled rules benchmark: compliance judge calls with and without
--judge-only-when-unsure, on a sample against the scripted fake server (127.0.0.1).

The fake's rules model extracts two rules ("at most 2 sentences", "starts with Hello")
and proposes a check for each; its judge finds an answer of more than two sentences
non-compliant. The first invocation evaluates one run per test and compiles the rules;
then the same context gets --runs-per-test N twice from one copy: once with
--judge-only-when-unsure and once without. Prints the judge calls the server saw in
each, and the saving the run recorded (they must match).

    python bench/compiled_rules.py [--sample classify-sentiment] [--effort low] [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import promptgen
from promptgen import Evaluation, Models, Options, Run
from promptgen.options import Generation
from tests.compile_fake import CompilingResponder
from tests.fakellm import FakeLLM


def judged(fake: FakeLLM) -> int:
    return sum(
        "ComplianceVerdict" in json.dumps(b.get("response_format") or {}) for b in fake.requests
    )


def run(source: str | Path, out: Path, fake: FakeLLM, **evaluation: object) -> promptgen.Context:
    options = Options(
        effort=ARGS.effort,
        generation=Generation(safety=False),
        evaluation=Evaluation(**evaluation),  # type: ignore[arg-type]
        models=Models(models=["m1"], api_base=fake.url),
        run=Run(out=out, cache=False, quiet=True),
    )
    return promptgen.run(source, options)


def main() -> None:
    sample = REPO / "samples" / f"{ARGS.sample}.prompty"
    with tempfile.TemporaryDirectory() as tmp, FakeLLM(responder=CompilingResponder()) as fake:
        first = Path(tmp) / "first"
        ctx = run(sample, first, fake, compile_rules=True)
        print(f"first run: {len(ctx.test_runs)} runs, {judged(fake)} judge calls")
        for c in ctx.compiled_rules:
            share = "-" if c.agreement is None else f"{100 * c.agreement:.0f}%"
            print(f"  {c.name}: {c.status}, agreement {share} over {c.compared} runs")
        control = Path(tmp) / "control"
        shutil.copytree(first, control)
        figures = {}
        for label, folder, flag in (("with", first, True), ("without", control, False)):
            fake.reset()
            ctx = run(folder / "context.json", folder, fake, runs_per_test=ARGS.runs,
                      compile_rules=True, judge_only_when_unsure=flag)  # fmt: skip
            figures[label] = (judged(fake), ctx.judge_calls_saved, len(ctx.test_runs))
        for label, (calls, saved, runs) in figures.items():
            head = f"--runs-per-test {ARGS.runs} {label} --judge-only-when-unsure:"
            print(f"{head} {runs} runs in all, {calls} judge calls, {saved} recorded as saved")
        cut = figures["without"][0] - figures["with"][0]
        print(f"judge calls cut: {cut} (recorded: {figures['with'][1]})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", default="classify-sentiment")
    parser.add_argument("--effort", default="low")
    parser.add_argument("--runs", type=int, default=3)
    ARGS = parser.parse_args()
    main()
