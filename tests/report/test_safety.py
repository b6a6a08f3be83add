"""The safety findings in the reports: the prompt's warning, the flagged tests counted
by verdict and listed, untrusted reasons escaped, nothing shown when nothing was judged."""

from __future__ import annotations

from promptgen.report.html import report_html
from promptgen.report.markdown import cell, report_markdown
from promptgen.report.safety import prompt_warning, summary_line
from promptgen.results import SafetyVerdict
from tests.report_data import XSS, report_context


def flagged_context():  # type: ignore[no-untyped-def]
    ctx = report_context()
    ctx.safety = SafetyVerdict(verdict="harmful", reason=f"asks for harm | {XSS}")
    verdicts = ["safe", "injection", "harmful", "injection"]
    for test, verdict in zip(ctx.tests, verdicts, strict=False):
        test.safety, test.safety_reason = verdict, f"{verdict} because {XSS}"
    return ctx


def test_nothing_judged_shows_nothing() -> None:
    ctx = report_context()
    assert summary_line(ctx) is None and prompt_warning(ctx) is None
    assert "## Safety" not in report_markdown(ctx)
    assert 'id="safety"' not in report_html(ctx)


def test_a_safe_run_says_so_in_one_line() -> None:
    ctx = report_context()
    ctx.safety = SafetyVerdict(verdict="safe", reason="ordinary")
    for test in ctx.tests:
        test.safety = "safe"
    n = len(ctx.tests)
    assert summary_line(ctx) == f"safety       prompt safe; none of {n} screened tests flagged"
    assert prompt_warning(ctx) is None
    section = report_markdown(ctx).split("## Safety", 1)[1].split("\n## ", 1)[0]
    assert f"- **Tests:** none of {n} screened tests flagged" in section
    assert "Warning" not in section and "| Test |" not in section


def test_flagged_prompt_and_tests_are_counted_listed_and_escaped() -> None:
    ctx = flagged_context()
    n = len(ctx.tests)
    assert n >= 4
    assert summary_line(ctx) == (
        "safety       prompt FLAGGED as harmful content; 3 of 4 screened tests flagged "
        "(2 prompt injection, 1 harmful content), not run on the models "
        "(--keep-unsafe runs them)"
    )
    warning = prompt_warning(ctx)
    assert warning is not None and warning.startswith(
        "the safety judge flags the prompt under test as harmful content: asks for harm"
    )
    md = report_markdown(ctx)
    section = md.split("## Safety", 1)[1].split("\n## ", 1)[0]
    assert (
        "> **Warning:** the safety judge flags the prompt under test as **harmful content**: "
        "asks for harm \\| &lt;/script&gt;" in section
    )
    assert "<script>" not in section and "&lt;script&gt;" in section
    ids = [cell(t.id) for t in ctx.tests[1:4]]
    rows = [r for r in section.splitlines() if r.startswith("| ") and "Verdict" not in r]
    assert [r.split(" | ")[0][2:] for r in rows] == ids
    assert [r.split(" | ")[1] for r in rows] == [
        "prompt injection",
        "harmful content",
        "prompt injection",
    ]
    html = report_html(ctx)
    block = html.split('<section id="safety">', 1)[1].split("</section>", 1)[0]
    assert block.count("<tr><td") == 3 and "<script>" not in block
    assert "&lt;/script&gt;" in block


def test_keep_unsafe_says_the_flagged_tests_ran() -> None:
    ctx = flagged_context()
    ctx.options.evaluation.keep_unsafe = True
    line = summary_line(ctx)
    assert line is not None and line.endswith(
        "(2 prompt injection, 1 harmful content), kept in the runs"
    )
