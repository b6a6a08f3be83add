"""--compile-rules and --judge-only-when-unsure end to end: `promptgen` in a subprocess,
every call over real HTTP to the fake server, the judge calls counted there."""

from __future__ import annotations

import csv
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from promptgen import load_context
from tests.cli.test_pipeline import promptgen
from tests.compile_fake import HELLO, TWO_SENTENCES, CompilingResponder
from tests.fakellm import FakeLLM

PROMPT = """---
name: answer-briefly
inputs:
  question: {type: string}
---
system:
Answer the question in at most 2 sentences, starting with Hello.

user:
{{question}}
"""


@pytest.fixture
def server() -> Iterator[tuple[FakeLLM, CompilingResponder]]:
    responder = CompilingResponder()
    with FakeLLM(responder=responder) as fake:
        yield fake, responder


def asked(fake: FakeLLM, name: str) -> int:
    return sum(name in json.dumps(b.get("response_format") or {}) for b in fake.requests)


def test_compiled_check_stands_in_for_the_judge(
    server: tuple[FakeLLM, CompilingResponder], tmp_path: Path
) -> None:
    fake, _ = server
    prompt = tmp_path / "answer-briefly.prompty"
    prompt.write_text(PROMPT, encoding="utf-8")
    first = tmp_path / "first"
    base = ["--api-base", fake.url, "--quiet", "--no-cache"]
    made = promptgen(
        tmp_path, str(prompt), "--effort", "min", "--tests-per-rule", "2", "--no-safety",
        "--models", "m1", "--compile-rules", "--out", str(first), *base,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    ctx = load_context(first / "context.json")
    # 2 rules x 2 tests + 2 inverse rules x 2 tests, and one more for the behaviours
    # beyond the rules' slots (3 boundary inputs, 2 the model found); all judged
    assert len(ctx.test_runs) == 9 and asked(fake, "ComplianceVerdict") == 9
    assert asked(fake, "RuleCheckProposal") == 2
    two, hello = ctx.compiled_rules
    assert [r.text for r in ctx.rules] == [TWO_SENTENCES, HELLO]
    assert (two.status, two.agreed, two.compared) == ("kept", 5, 5)
    assert (hello.status, hello.agreed, hello.compared) == ("disagrees", 0, 4)
    assert "compiled     1 of 2 rules kept as checks; 0 judge calls saved" in made.stdout
    with (first / "overview.csv").open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert [float(r[two.name]) for r in rows if r["scenario"] == "(all)"] == [100.0]
    report = (first / "report.md").read_text(encoding="utf-8")
    row = f'| {two.name} | {TWO_SENTENCES} | sentence-count={{"max": 2}} | kept | 100% (5/5) |'
    assert row in report
    assert "dropped: disagrees with the judge | 0% (0/4)" in report
    html = (first / "report.html").read_text(encoding="utf-8")
    assert html.count("100% (5/5)") == 1 and html.count("0% (0/4)") == 1

    # A second run per test, with and without the judge standing down.
    control = tmp_path / "control"
    shutil.copytree(first, control)
    more = ["--runs-per-test", "2", *base]
    fake.reset()
    sure = promptgen(tmp_path, str(first / "context.json"), *more, "--judge-only-when-unsure")
    assert sure.returncode == 0, sure.stderr
    with_flag = asked(fake, "ComplianceVerdict")
    fake.reset()
    plain = promptgen(tmp_path, str(control / "context.json"), *more)
    assert plain.returncode == 0, plain.stderr
    without = asked(fake, "ComplianceVerdict")
    assert (with_flag, without) == (4, 9)
    saved = load_context(first / "context.json").judge_calls_saved
    assert saved == without - with_flag == 5
    assert "compiled     1 of 2 rules kept as checks; 5 judge calls saved" in sure.stdout
    assert "5 compliance judge calls saved" in (first / "report.md").read_text(encoding="utf-8")

    fake.reset()  # resumed: nothing is asked again
    again = promptgen(tmp_path, str(first / "context.json"), *more, "--judge-only-when-unsure")
    assert again.returncode == 0, again.stderr
    assert fake.requests == []
    assert load_context(first / "context.json").judge_calls_saved == 5
