"""JUnit XML for CI: one testsuite per model, one testcase per (test, model); for a batch
of prompts, one testsuite per prompt (`junit_batch_xml`).

A testcase aggregates its runs and gets at most one status, most serious first:
<failure> (a run was non-compliant or failed a check), <error> (a run errored, or its
reply was empty or cut off: type "faulty-output", never a pass or a failure; or a metric
or check could not decide on a run, e.g. an LVE checker's lambda failed: type
"undecided", with the metric and its reason), <skipped> (no run got a compliance
verdict; without the compliance judge, no run got a check's verdict); otherwise it passed.

The document is scrubbed of every known key value before it is returned.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import dataclass

from promptgen.context import Context
from promptgen.report.stats import (
    FAULT_LABELS,
    Failure,
    Undecided,
    check_names,
    error_kind,
    error_text,
    excerpt,
    failures,
    has_compliance_judge,
    passed,
    reason_label,
    undecided,
    verdict,
)
from promptgen.results import TestRun
from promptgen.secrets import scrub
from promptgen.words import counted

# Characters XML 1.0 cannot carry at all, even escaped; model outputs may contain them.
_INVALID_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
COUNTS = ("tests", "failures", "errors", "skipped")


def clean(value: object) -> str:
    return _INVALID_XML.sub("\ufffd", str(value))


def junit_xml(ctx: Context) -> str:
    root = ET.Element("testsuites", name=clean(f"promptgen: {ctx.prompt.name}"))
    totals: Counter[str] = Counter()
    total_time = 0.0
    for model in ctx.models_run:
        runs = [r for r in ctx.test_runs if r.model == model]
        suite = ET.SubElement(root, "testsuite", name=clean(model))
        counts = _add_cases(suite, ctx, runs)
        seconds = _seconds(runs)
        _set_counts(suite, counts, seconds)
        totals.update(counts)
        total_time += seconds
    return _document(root, totals, total_time)


@dataclass
class SuiteSource:
    """One prompt of a batch, as its JUnit testsuite needs it: its name, its context
    (None when it failed before running), and its error and exit code."""

    name: str
    ctx: Context | None
    code: int = 0
    error: str | None = None


def junit_batch_xml(prompts: list[SuiteSource]) -> str:
    """One testsuite per prompt of a batch, a testcase per (test, model). A prompt that
    failed gets a testcase `promptgen` holding its error (exit code 2 or 3) or the
    quality gate's failure (exit code 1), so CI shows why even when no test ran."""
    root = ET.Element("testsuites", name="promptgen batch")
    totals: Counter[str] = Counter()
    total_time = 0.0
    for prompt in prompts:
        suite = ET.SubElement(root, "testsuite", name=clean(prompt.name))
        ctx = prompt.ctx
        runs = ctx.test_runs if ctx is not None else []
        counts = _add_cases(suite, ctx, runs) if ctx is not None else Counter()
        if prompt.error is not None:
            status = "failures" if prompt.code == 1 else "errors"
            case = ET.SubElement(suite, "testcase", name="promptgen", classname=clean(prompt.name))
            tag = "failure" if status == "failures" else "error"
            ET.SubElement(case, tag, message=clean(prompt.error), type=f"exit-{prompt.code}")
            counts.update(["tests", status])
        seconds = _seconds(runs)
        _set_counts(suite, counts, seconds)
        totals.update(counts)
        total_time += seconds
    return _document(root, totals, total_time)


def _add_cases(suite: ET.Element, ctx: Context, runs: list[TestRun]) -> Counter[str]:
    """A testcase per (test, model) of `runs`; the counts of their statuses."""
    failing = {f.run.key: f for f in failures(ctx)}
    blank: dict[tuple[str, str], list[Undecided]] = {}
    for item in undecided(ctx):
        blank.setdefault((item.run.test_id, item.run.model), []).append(item)
    counts: Counter[str] = Counter()
    for key in dict.fromkeys((r.test_id, r.model) for r in runs):
        mine = [r for r in runs if (r.test_id, r.model) == key]
        failed = [failing[r.key] for r in mine if r.key in failing]
        status = _testcase(suite, ctx, mine, failed, blank.get(key, []))
        counts.update(["tests", status])
    return counts


def _document(root: ET.Element, totals: Counter[str], seconds: float) -> str:
    _set_counts(root, totals, seconds)
    ET.indent(root)
    document = '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, "unicode") + "\n"
    return scrub(document, shapes=False)


def _set_counts(element: ET.Element, counts: Counter[str], seconds: float) -> None:
    for name in COUNTS:
        element.set(name, str(counts[name]))
    element.set("time", f"{seconds:.3f}")


def _seconds(runs: list[TestRun]) -> float:
    return sum(r.latency_ms or 0.0 for r in runs) / 1000


def _testcase(
    suite: ET.Element,
    ctx: Context,
    runs: list[TestRun],
    failing: list[Failure],
    blank: list[Undecided],
) -> str:
    """Add one testcase; return its status ("failures", "errors", "skipped" or "passed").
    A metric that could not decide is an <error>, not a <skipped>: CI systems show an
    error as a red test with its message, while a skipped test reads as nothing wrong."""
    test = ctx.test(runs[0].test_id)
    checks = check_names(ctx)
    judged = has_compliance_judge(ctx)
    case = ET.SubElement(
        suite,
        "testcase",
        name=clean(runs[0].test_id),
        classname=clean(runs[0].model),
        time=f"{_seconds(runs):.3f}",
    )
    errored = [r for r in runs if r.error is not None or r.fault is not None]
    if failing:
        status = "failures"
        message = f"{len(failing)} of {counted(len(runs), 'run')} failed"
        if errored:
            message += f", {len(errored)} errored"
        reasons = [r for f in failing for r in f.reasons]
        if reasons:
            message += f": {reason_label(reasons[0])}: {excerpt(reasons[0].reason, 200)}"
        kind = "non-compliant" if any(verdict(f.run) is False for f in failing) else "check-failed"
        element = ET.SubElement(case, "failure", message=clean(message), type=kind)
        element.text = clean("\n\n".join(map(_failure_text, failing)))
    elif errored:
        status = "errors"
        first = errored[0]
        message = (
            f"{len(errored)} of {counted(len(runs), 'run')} errored: {excerpt(error_text(first))}"
        )
        kind = "faulty-output" if all(r.fault for r in errored) else "run-error"
        element = ET.SubElement(case, "error", message=clean(message), type=kind)
        element.text = clean(
            "\n".join(f"run {r.run_index}: {error_kind(r)}: {error_text(r)}" for r in errored)
        )
    elif blank:
        status = "errors"
        item = blank[0]
        message = (
            f"{item.metric} could not decide on {len(blank)} of "
            f"{counted(len(runs), 'run')}: {excerpt(item.reason, 200)}"
            if len({i.metric for i in blank}) == 1
            else f"{len(blank)} verdicts could not decide: {item.metric}: "
            f"{excerpt(item.reason, 200)}"
        )
        element = ET.SubElement(case, "error", message=clean(message), type="undecided")
        element.text = clean(
            "\n".join(f"run {i.run.run_index}: {i.metric}: {i.reason}" for i in blank)
        )
    elif all(passed(r, checks, judged) is None for r in runs):
        status = "skipped"
        what = "compliance verdict" if judged else "verdict"
        ET.SubElement(case, "skipped", message=f"no {what} (the judges did not answer)")
    else:
        status = "passed"
    inputs = json.dumps(test.inputs if test else {}, ensure_ascii=False, default=str)
    outputs = "\n".join(f"run {r.run_index}: {_shown(r)}" for r in runs)
    ET.SubElement(case, "system-out").text = clean(f"inputs: {inputs}\n{outputs}")
    return status


def _failure_text(failure: Failure) -> str:
    run = failure.run
    what = (["non-compliant"] if verdict(run) is False else []) + [
        f"{c} failed" for c in failure.checks
    ]
    lines = [f"run {run.run_index}: {', '.join(what)}"]
    if failure.rule:
        lines.append(f"rule: {failure.rule.text}")
    lines += [f"{reason_label(r)}: {r.reason or '-'}" for r in failure.reasons]
    lines.append(f"output: {_shown(run)}")
    return "\n".join(lines)


def _shown(run: TestRun) -> str:
    if run.fault is not None:
        return f"({FAULT_LABELS[run.fault]}) {excerpt(run.output, 2000)}".rstrip()
    if run.output is not None:
        return excerpt(run.output, 2000)
    return f"(no output: {error_text(run)})"
