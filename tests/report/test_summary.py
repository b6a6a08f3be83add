"""The batch summary's figures, read from a context with known tests and runs."""

from __future__ import annotations

import csv
import io

from promptgen.report.summary import Entry, summary_csv, summary_markdown
from tests.report_data import report_context


def test_invalid_and_unsafe_tests_are_counted_per_prompt() -> None:
    ctx = report_context()
    ctx.tests[0].safety, ctx.tests[1].safety = "injection", "safe"
    invalid = sum(t.valid is False for t in ctx.tests)
    assert invalid >= 1  # the fixture holds a rejected test
    entries = [
        Entry(prompt="greeter", file="greeter.prompty", status="ok", code=0, ctx=ctx),
        Entry(prompt="broken", file="broken.prompty", status="bad input", code=2, error="x"),
    ]
    rows = list(csv.DictReader(io.StringIO(summary_csv(entries))))
    greeter = [r for r in rows if r["prompt"] == "greeter"]
    assert greeter and all(r["invalid"] == str(invalid) for r in greeter)
    assert all(r["unsafe"] == "1" for r in greeter)
    broken = next(r for r in rows if r["prompt"] == "broken")
    assert (broken["invalid"], broken["unsafe"], broken["exit_code"]) == ("", "", "2")
    text = summary_markdown(entries, 2, [])
    assert "| tests | invalid | unsafe | runs | errors |" in text


def test_the_evaluation_line_counts_runs_failing_a_check_as_failing() -> None:
    from promptgen.report.console import evaluation_line

    ctx = report_context()
    # compliant: 5 of the 8 judged runs. Failing: model a's t1 (second run) and t3
    # (non-compliant, check failed), model b's t2 (non-compliant) and t4 (compliant, the
    # check failed); errored: model a's t4
    assert evaluation_line(ctx).split(": ", 1)[1] == (
        "compliance 62.5%, 4 failing (non-compliant or a check failed), 1 errored"
    )
