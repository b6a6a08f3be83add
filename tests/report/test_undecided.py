"""Issue 28 item 6: a metric or check that could not decide says so, with its reason, in
every output a user reads: overview.csv, report.md, report.html, JUnit, the batch
summary (files and terminal) and the run's evaluation line.

A real run against the fake server of an LVE test.json whose checker lambda always fails
(NameError), with a check whose `{{missing}}` no test gives.
"""

from __future__ import annotations

import csv
import json
import shutil
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest

from promptgen import load_context
from tests.cli.test_pipeline import promptgen
from tests.conftest import REPO
from tests.fakellm import FakeLLM
from tests.pipeline_fake import PipelineResponder

SAMPLE = REPO / "samples/lve/discount-code-leak/openai--gpt-4o-mini"
LAMBDA = "lambda r, **kw: undefined_name in r"
CHECK = "contains={{missing}}"
LVE_REASON = (
    "for this test: name 'undefined_name' is not defined: 'lambda r, **kw: undefined_name in r'"
)
CHECK_REASON = "the check needs {{missing}}, which this test does not give"
LVE_LINE = f"lve:LambdaChecker could not decide on 2 of 2 runs: {LVE_REASON}"
# as report.md writes it: Markdown's _ and * escaped
MD_LVE_REASON = (
    r"for this test: name 'undefined\_name' is not defined: "
    r"'lambda r, \*\*kw: undefined\_name in r'"
)
CHECK_LINE = f"{CHECK} could not decide on 2 of 2 runs: {CHECK_REASON}"


@pytest.fixture(scope="module")
def server() -> Iterator[FakeLLM]:
    with FakeLLM(responder=PipelineResponder()) as fake:
        yield fake


def _lve(tmp: Path) -> Path:
    folder = tmp / "lve"
    shutil.copytree(SAMPLE, folder)
    test = folder / "test.json"
    data = json.loads(test.read_text(encoding="utf-8"))
    data["checker_args"] = {"checker_name": "LambdaChecker", "func": LAMBDA}
    test.write_text(json.dumps(data), encoding="utf-8")
    return folder


def _run(tmp: Path, fake: FakeLLM, target: Path) -> str:
    result = promptgen(
        tmp, str(target), "--effort", "min", "--api-base", fake.url, "--out", str(tmp / "out"),
        "--models", "m1", "--max-tests-to-run", "2", "--check", CHECK,
        "--junit", str(tmp / "junit.xml"),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_one_run_shows_every_undecided_verdict(server: FakeLLM, tmp_path: Path) -> None:
    stdout = _run(tmp_path, server, _lve(tmp_path) / "test.json")
    out = tmp_path / "out"
    ctx = load_context(out / "context.json")
    tests = [r.test_id for r in ctx.test_runs]
    assert len(tests) == 2

    evaluation = next(line for line in stdout.splitlines() if line.startswith("evaluation"))
    assert evaluation == (
        "evaluation   2 runs on m1: compliance 100.0%, 0 failing (non-compliant or a check "
        "failed), 0 errored; 4 undecided (2 metrics could not decide)"
    )

    with (out / "overview.csv").open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert [(r["scenario"], r["runs"], r["errors"], r["undecided"]) for r in rows] == [
        ("(all)", "2", "0", "4"),
        ("(none)", "2", "0", "4"),
    ]
    assert rows[0]["lve:LambdaChecker"] == rows[0][CHECK] == ""

    markdown = (out / "report.md").read_text(encoding="utf-8")
    section = markdown.split("## Undecided\n\n", 1)[1].splitlines()
    assert section == [
        "A metric or check that could not decide on a run gives it no verdict: the run is in "
        "no rate or average of that metric.",
        "",
        f"- {CHECK_LINE}",
        f"- lve:LambdaChecker could not decide on 2 of 2 runs: {MD_LVE_REASON}",
        "",
        "| Test | Model | Run | Metric | Reason |",
        "|---|---|---|---|---|",
        f"| {tests[0]} | m1 | 0 | {CHECK} | {CHECK_REASON} |",
        f"| {tests[1]} | m1 | 0 | {CHECK} | as above |",
        f"| {tests[0]} | m1 | 0 | lve:LambdaChecker | {MD_LVE_REASON} |",
        f"| {tests[1]} | m1 | 0 | lve:LambdaChecker | as above |",
    ]

    html = (out / "report.html").read_text(encoding="utf-8")
    body = html.split('<section id="undecided"><h2>Undecided</h2>', 1)[1].split("</section>")[0]
    assert "<li>contains={{missing}} could not decide on 2 of 2 runs: the check needs " in body
    assert (
        "<li>lve:LambdaChecker could not decide on 2 of 2 runs: for this test: name "
        "&#x27;undefined_name&#x27; is not defined: &#x27;lambda r, **kw: undefined_name in "
        "r&#x27;</li>"
    ) in body
    assert body.count("<td>as above</td>") == 2

    suite = ET.parse(tmp_path / "junit.xml").getroot()
    assert (suite.get("tests"), suite.get("errors"), suite.get("failures")) == ("2", "2", "0")
    for case in suite.iter("testcase"):
        error = case.find("error")
        assert error is not None
        assert error.get("type") == "undecided"
        assert error.get("message") == f"2 verdicts could not decide: {CHECK}: {CHECK_REASON}"
        assert error.text == (
            f"run 0: {CHECK}: {CHECK_REASON}\nrun 0: lve:LambdaChecker: {LVE_REASON}"
        )


def test_batch_summary_counts_undecided_per_prompt_and_model(
    server: FakeLLM, tmp_path: Path
) -> None:
    stdout = _run(tmp_path, server, _lve(tmp_path))
    lines = stdout.splitlines()
    assert lines[1].split() == [
        "prompt", "model", "status", "tests", "runs", "errors", "undecided", "compliance", "exit",
    ]  # fmt: skip
    assert lines[3].split() == ["lve", "m1", "ok", "2", "2", "0", "4", "100.0%", "0"]
    printed = " ".join(stdout.split())
    assert f"Undecided - `lve`: {CHECK_LINE} - `lve`: {LVE_LINE} " in printed

    out = tmp_path / "out"
    with (out / "summary.csv").open(encoding="utf-8") as handle:
        (row,) = list(csv.DictReader(handle))
    assert (row["model"], row["runs"], row["errors"], row["undecided"]) == ("m1", "2", "0", "4")
    summary = (out / "summary.md").read_text(encoding="utf-8")
    assert f"## Undecided\n\n- `lve`: {CHECK_LINE}\n- `lve`: {LVE_LINE}\n" in summary
    assert "| errors | undecided | compliance |" in summary
    assert "| 2 | 0 | 4 | 100.0% |" in summary
