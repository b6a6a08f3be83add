"""`promptgen lve run`: an LVE's prompt on models, checked, recorded as LVE instances.

Each instance (a recorded instance's arguments, or the parameters given) runs once per
model: parameters fill the prompt, the other arguments (temperature, top_p, max_tokens)
go to the call over the test's `default_model_args` (temperature 0 unless given, as LVE
runs); a multi-step prompt is walked step by step and a multi-run prompt calls each of
its prompts `repetitions` times (stages/_steps.py). The LVE's checker then decides
whether the response is safe (evaluation/lve_checkers.py), and every result is written
as a line of LVE's `instances/*.jsonl` format.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from promptgen.errors import BadInputError
from promptgen.evaluation.lve_checkers import Observation, check
from promptgen.formats.lve import LveTest, to_prompt
from promptgen.formats.lve_files import model_dir, split_args
from promptgen.llm import LLM, bounded_gather
from promptgen.options import Evaluation
from promptgen.progress import Reporter
from promptgen.prompting.invoke import call_settings
from promptgen.results import Test, TestRun, Usage
from promptgen.secrets import scrub
from promptgen.stages.runs import run_test
from promptgen.version import __version__

STAGE = "lve-run"


@dataclass
class Job:
    """One instance to run: its arguments and, when re-run, the verdict recorded."""

    args: dict[str, Any]
    recorded: bool | None = None
    where: str | None = None  # file:line of the recorded instance


@dataclass
class Result:
    job: Job
    model: str
    response: Any = None  # as LVE records it: text, variables, or a list (multi-run)
    passed: bool | None = None  # None: not checked (an error, or no built-in checker)
    reason: str = ""
    error: str | None = None
    usage: Usage = field(default_factory=Usage)

    @property
    def agrees(self) -> bool | None:
        if self.job.recorded is None or self.passed is None:
            return None
        return self.passed == self.job.recorded


def observation(test: LveTest, run: TestRun) -> tuple[Observation, Any]:
    """What the checker sees of a run, and the response as LVE records it."""
    steps = dict(run.steps or {})
    if test.runs:
        answers = list(steps.values())
        return Observation(response=answers[-1] if answers else None, responses=answers), answers
    variables = steps or {"response": run.output or ""}
    recorded: Any = variables if len(variables) > 1 else run.output
    return Observation(response=run.output, variables=variables), recorded


async def run_one(test: LveTest, llm: LLM, job: Job, model: str, index: int) -> Result:
    params, model_args = split_args(job.args, test.prompt_parameters)
    prompt = to_prompt(test, samples=False, auto_input=False)
    prompt.model.parameters = {**prompt.model.parameters, **model_args}
    settings = call_settings(prompt, Evaluation())
    case = Test(id=f"lve-{index}", inputs=params, origin="sample")
    run = await run_test(prompt, llm, settings, case, model, 0, STAGE)
    result = Result(job, model, usage=run.usage)
    if run.error is not None:
        result.error = run.error
        return result
    seen, result.response = observation(test, run)
    try:
        outcome = check(test.checker_args, job.args, test.prompt_parameters, seen)
    except BadInputError as err:  # e.g. an instance that lacks a value the checker names
        result.reason = f"not checked: {err.message}"
        return result
    result.passed, result.reason = outcome.safe, outcome.reason
    return result


async def run_lve(
    test: LveTest,
    llm: LLM,
    models: Sequence[str],
    jobs: Sequence[Job],
    reporter: Reporter | None = None,
) -> list[Result]:
    """Every job on every model (the gateway bounds how many calls are in flight)."""
    cells = [(job, model, i) for model in models for i, job in enumerate(jobs)]
    if reporter is not None:
        reporter.start({STAGE: sum(_calls(test) for _ in cells)})

    async def one(job: Job, model: str, index: int) -> Result:
        result = await run_one(test, llm, job, model, index)
        if reporter is not None:
            reporter.update(llm.usage.totals.by_stage)
        return result

    return await bounded_gather([partial(one, *c) for c in cells])


def _calls(test: LveTest) -> int:
    """Model calls per instance: one per step (a multi-run prompt: per repetition)."""
    runs = [(r.messages, r.repetitions) for r in test.runs] or [(test.messages, 1)]
    total = 0
    for messages, repetitions in runs:
        fills = sum(m.to_fill for m in messages)
        total += repetitions * (fills + (0 if messages and messages[-1].to_fill else 1))
    return total


def instance_line(result: Result, author: str | None) -> dict[str, Any]:
    """One line of LVE's instances format (`passed` null when it could not be checked:
    LVE would read a missing one as safe)."""
    line: dict[str, Any] = {
        "args": result.job.args,
        "response": result.response,
        "passed": result.passed,
        "author": author or "",
        "run_info": {
            "promptgen": __version__,
            "model": result.model,
            "timestamp": time.ctime(),
        },
    }
    if result.error is not None:
        line["error"] = result.error
    elif result.passed is None:
        line["check"] = result.reason
    return line


def write_instances(
    results: Sequence[Result], out: Path, author: str | None, name: str = "promptgen.jsonl"
) -> list[Path]:
    """`out/<model dir>/instances/<name>`, one file per model, in job order."""
    written = []
    for model in dict.fromkeys(r.model for r in results):
        path = out / model_dir(model) / "instances" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        lines = [instance_line(r, author) for r in results if r.model == model]
        text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
        path.write_text(scrub(text, shapes=False), encoding="utf-8")  # an echoed key blanked
        written.append(path)
    return written
