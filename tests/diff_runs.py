"""Two real runs of one prompt for the diff tests: the whole pipeline on the fake server,
twice, with scripted answers that differ in known ways.

Tests name their rule in their input ("review value N-R2-0" targets rule 2, "-I1-" its
first inverse rule), so the fake decides by that label which outputs break a rule:

    then (A): m1 breaks R3, m2 breaks I1
    now  (B): m1 breaks R2 and R3; R1's test expects something else; R4's test has
              other inputs (so another id: one test removed, one added)

Two models, two runs per test, eight tests: each model has 16 runs in each context.
Figures (by hand): m1 compliance 87.5 -> 75.0, m2 87.5 -> 100.0; the runs of R2 on m1
flip pass -> fail, those of I1 on m2 fail -> pass.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from promptgen import Options, run
from promptgen.options import Evaluation, Generation, Models, Run
from tests.conftest import REPO
from tests.fakellm import FakeLLM, Reply
from tests.pipeline_fake import PipelineResponder

SAMPLE = REPO / "samples" / "classify-sentiment.prompty"
CHECK = "not-icontains=violation"
CUSTOM = "classify-sentiment-compliance"  # the *.metric.prompty beside the sample
THEN_BAD = {("m1", "R3"), ("m2", "I1")}
NOW_BAD = {("m1", "R2"), ("m1", "R3")}
_LABEL = re.compile(r"value \d+-([RI]\d+)-\d+")


class Scripted(PipelineResponder):
    """Outputs break a rule for the (model, label) pairs in `bad`; `now` rewords R1's
    expected output and R4's inputs."""

    def __init__(self, bad: set[tuple[str, str]], now: bool = False) -> None:
        super().__init__()
        self.by_content = True  # the same request gets the same answer in both runs
        self.bad = bad
        self.now = now

    def __call__(self, body: dict[str, Any]) -> Reply:
        text = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
        if body.get("response_format") or "Output to judge:" in text:
            return super().__call__(body)
        model = str(body["model"])
        label = _LABEL.search(text)
        name = label.group(1) if label else "?"
        broken = f" {self.bad_word}" if (model, name) in self.bad else ""
        return Reply(content=f"{model} answers {name}{broken}")

    def answer(self, name: str, schema: dict[str, Any], text: str, n: int) -> Any:
        answer = super().answer(name, schema, text, n)
        if self.now and name == "TestCases" and "R1" in answer:
            answer["R1"]["1"]["expected_output"] = "a reworded expectation"
            answer["R4"]["1"]["inputs"]["review"] += " (reworded)"
        return answer


def run_once(
    folder: Path,
    responder: PipelineResponder,
    sample: Path = SAMPLE,
    models: tuple[str, str] = ("m1", "m2"),
) -> Path:
    """Generate and evaluate `sample` into `folder`; return the folder."""
    with FakeLLM(responder=responder) as fake:
        options = Options(
            effort="min",
            # a test per rule and inverse rule, as the figures above count them
            generation=Generation(behaviours=False),
            models=Models(api_base=fake.url, models=list(models)),
            evaluation=Evaluation(checks=[CHECK], runs_per_test=2),
            run=Run(out=folder, cache=False, quiet=True),
        )
        run(sample, options)
    return folder


def without_input_sample(folder: Path) -> Path:
    """The sample (and its metric beside it) without its input's `sample`, which would be
    a ninth test that names no rule: the figures above count the eight generated ones."""
    folder.mkdir(parents=True, exist_ok=True)
    metric = SAMPLE.with_name(f"{SAMPLE.stem}.metric.prompty")
    (folder / metric.name).write_text(metric.read_text())
    text = re.sub(r"\n    sample: >-\n(?:      .*\n)+", "\n", SAMPLE.read_text())
    assert "sample:" not in text
    (folder / SAMPLE.name).write_text(text)
    return folder / SAMPLE.name


def two_runs(tmp: Path, models: tuple[str, str] = ("m1", "m2")) -> tuple[Path, Path]:
    """The folders of run A (then) and run B (now); `models` stand for m1 and m2."""
    sample = without_input_sample(tmp / "prompt")
    # as the server sees them: a provider prefix is not sent to an --api-base server
    named = {m: name.split("/", 1)[-1] for m, name in zip(("m1", "m2"), models, strict=True)}
    then_bad = {(named[m], label) for m, label in THEN_BAD}
    now_bad = {(named[m], label) for m, label in NOW_BAD}
    then = run_once(tmp / "then", Scripted(then_bad), sample, models)
    now = run_once(tmp / "now", Scripted(now_bad, now=True), sample, models)
    return then, now
