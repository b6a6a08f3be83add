"""Promptarchitect end to end: a prompt file written as Promptarchitect's docs describe
(tests of every type, a test_path folder of samples) run with `promptgen pa run` and with
the main command against the fake server, checked by the values the reports show."""

from __future__ import annotations

import csv
import json
import os
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from promptgen import load_context
from promptgen.cli import run_app
from promptgen.formats import load_prompt
from tests.cli.test_pipeline import promptgen
from tests.fakellm import FakeLLM, Reply
from tests.pipeline_fake import PipelineResponder

PROMPT = """---
provider: openai
model: gpt-4o-mini
test_path: ./tests
parameters:
  temperature: 0.2
  max_tokens: 300
author: Support Tooling
date_created: 2024-05-14
description: Answers a customer's question from a help-centre article.
tests:
  helpful:
    type: question
    prompt: Does the reply answer the customer's question?
  friendly:
    type: score
    prompt: How friendly is the reply?
    min: 1
    max: 5
    threshold: 4
  grounded:
    type: metric
    metric: faithfulness
    input:
      question: input
      answer: output
      context: article
    limit:
      min: 0.8
  short:
    type: property
    unit: words
    limit:
      max: 20
  two_sentences:
    type: property
    property:
      unit: sentences
      equal: 2
  plain:
    type: format
    format: text
  english:
    type: language
    lang_code: en
  signed:
    type: keyword
    keyword: Support Team
---
Answer the customer's question using only this article:

{{article}}

Question: {{input}}
"""

SAMPLES = {
    "1-reset.md": ("Resetting: use the link on the sign-in page.", "How do I reset my password?"),
    "2-spam.md": ("Reset e-mails can land in spam.", "The reset e-mail never came."),
    "3-refund.md": ("Refunds take five days.", "Where is my refund?"),
}
# What the model under test answers for each sample (found by its question).
OUTPUTS = {
    "How do I reset my password?": "You can reset your password from the sign-in page. "
    "The Support Team",
    "The reset e-mail never came.": "Please check the spam folder for the reset e-mail. "
    "The Support Team",
    # French, one sentence, unsigned, and the word the judges fail
    "Where is my refund?": "VIOLATION: je ne sais pas du tout quoi répondre à cette question.",
}
TESTS = ("helpful", "friendly", "grounded", "short", "two_sentences", "plain", "english",
         "signed")  # fmt: skip
# Average over the three samples of each test's score, as overview.csv shows it: the
# third sample fails every test but `short` and `plain` (faithfulness: 1 of 2 claims).
AVERAGES = {"helpful": 66.6667, "friendly": 66.6667, "grounded": 83.3333, "short": 100,
            "two_sentences": 66.6667, "plain": 100, "english": 66.6667,
            "signed": 66.6667}  # fmt: skip


class Support(PipelineResponder):
    """The pipeline's answers; the model under test answers each sample as OUTPUTS says
    (and any generated test with a signed English sentence)."""

    def _under_test(self, body: dict[str, Any], text: str) -> Reply:
        self.seen.append(body)
        answer = next((out for q, out in OUTPUTS.items() if f"Question: {q}" in text), None)
        return Reply(content=answer or "We can help with that today. The Support Team")


@pytest.fixture
def server() -> Iterator[tuple[FakeLLM, Support]]:
    responder = Support()
    with FakeLLM(responder=responder) as fake:
        yield fake, responder


@pytest.fixture
def prompt_file(tmp_path: Path) -> Path:
    folder = tmp_path / "prompts"
    (folder / "tests").mkdir(parents=True)
    for name, (article, question) in SAMPLES.items():
        text = f"---\narticle: {json.dumps(article)}\n---\n\n{question}\n"
        (folder / "tests" / name).write_text(text)
    path = folder / "support.prompt"
    path.write_text(PROMPT)
    return path


def overview_row(out: Path) -> dict[str, str]:
    with (out / "overview.csv").open() as handle:
        (row,) = [r for r in csv.DictReader(handle) if r["scenario"] == "(all)"]
    return row


def test_pa_run_runs_every_sample_and_every_test(
    server: tuple[FakeLLM, Support], prompt_file: Path, tmp_path: Path
) -> None:
    fake, responder = server
    out, junit = tmp_path / "out", tmp_path / "junit.xml"
    result = promptgen(
        tmp_path, "pa", "run", str(prompt_file), "--models", "m1", "--api-base", fake.url,
        "--out", str(out), "--junit", str(junit), "--fail-under", "80", "--quiet",
    )  # fmt: skip
    # 18 of 24 verdicts passed: 75% is below --fail-under 80 (the reports are written)
    assert result.returncode == 1, result.stderr
    assert "promptarchitect tests: 18 of 24 verdicts passed (75.0%)" in result.stdout
    assert result.stderr.strip().splitlines()[-1] == (
        "promptgen: error: 75.0% of the Promptarchitect test verdicts passed, below "
        "--fail-under 80%"
    )
    # Nothing generated, no compliance judge: the models under test and the three judges.
    assert responder.calls == {
        "text": 3, "PaQuestionAnswer": 3, "PaScoreAnswer": 3, "FaithfulnessAnswer": 3,
    }  # fmt: skip
    sent = [b for b in fake.requests if not b.get("response_format")]
    assert {b["temperature"] for b in sent} == {0.2}
    assert sent[0]["messages"][0]["role"] == "system"
    ctx = load_context(out / "context.json")
    assert [t.origin for t in ctx.tests] == ["sample"] * 3
    assert [m.name for m in ctx.metrics] == [f"pa:{t}" for t in TESTS]
    row = overview_row(out)
    assert (row["model"], row["tests"], row["runs"], row["compliance"]) == ("m1", "3", "3", "")
    assert {t: float(row[f"pa:{t}"]) for t in TESTS} == pytest.approx(AVERAGES, abs=1e-3)
    report = (out / "report.md").read_text()
    assert "pa:grounded" in report and "83.3" in report
    assert "1 of 2 claims supported: 0.50 (limit at least 0.8)" in report
    assert (out / "report.html").is_file()
    suite = ET.parse(junit).getroot()
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("3", "1", "0")
    (failure,) = suite.iter("failure")
    assert failure.get("type") == "check-failed"
    assert "pa:helpful failed" in (failure.text or "")


def test_the_main_command_scores_generated_tests_and_samples_with_the_files_tests(
    server: tuple[FakeLLM, Support], prompt_file: Path, tmp_path: Path
) -> None:
    fake, responder = server
    out = tmp_path / "main"
    result = promptgen(
        tmp_path, str(prompt_file), "--effort", "min", "--models", "m1", "--api-base",
        fake.url, "--out", str(out), "--max-tests-to-run", "100", "--quiet",
        "--export", "promptarchitect",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    ctx = load_context(out / "context.json")
    # Exported back: the file's own tests, and a sample per test.
    exported = load_prompt(out / "exports" / "promptarchitect" / "support.prompt")
    assert (
        exported.extra["promptarchitect"]["tests"] == ctx.prompt.extra["promptarchitect"]["tests"]
    )
    assert len(exported.test_samples) == len(ctx.tests)
    assert ctx.intent and ctx.rules  # generated as usual
    origins = [t.origin for t in ctx.tests]
    assert origins.count("sample") == 3 and "generated" in origins
    names = [m.name for m in ctx.metrics]
    assert names == ["compliance", *(f"pa:{t}" for t in TESTS), "expected_class"]
    runs = {r.test_id: r for r in ctx.test_runs}
    for test in ctx.tests:
        # the class check only where the test expects a class
        unasked = set() if test.expected_class else {"expected_class"}
        assert set(runs[test.id].metrics) == set(names) - unasked, test.origin
    samples = [t for t in ctx.tests if t.origin == "sample"]
    outcomes = {t.inputs["input"]: runs[t.id].metrics["pa:signed"].outcome for t in samples}
    assert outcomes == {
        "How do I reset my password?": "ok",
        "The reset e-mail never came.": "ok",
        "Where is my refund?": "err",
    }
    # Generated tests give `article` too: the faithfulness test scores them.
    generated = [t for t in ctx.tests if t.origin == "generated"]
    assert all("article" in t.inputs for t in generated)
    assert all(runs[t.id].metrics["pa:grounded"].score == 100.0 for t in generated)
    row = overview_row(out)
    assert float(row["pa:short"]) == 100.0 and row["compliance"]
    assert responder.calls["FaithfulnessAnswer"] == len(ctx.tests)


def test_pa_run_refuses_other_files_and_files_without_samples(
    server: tuple[FakeLLM, Support],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake, _ = server
    monkeypatch.chdir(tmp_path)  # no config file, no models from the environment
    for name in [n for n in os.environ if n.startswith(("PROMPTGEN_", "OPENAI_"))]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("PROMPTGEN_CACHE_DIR", str(tmp_path / "cache"))
    other = tmp_path / "plain.md"
    other.write_text("Summarise {{text}}.\n")
    assert run_app(args=["pa", "run", str(other), "--models", "m1"]) == 2
    assert capsys.readouterr().err == (
        f"promptgen: error: {other}: is not a Promptarchitect prompt file (its frontmatter "
        "needs Promptarchitect keys (provider, test_path, tests, ...); run other prompts with "
        "`promptgen FILE`)\n"
    )
    bare = tmp_path / "bare.prompt"
    bare.write_text("---\nprovider: openai\nmodel: m\n---\nHi {{input}}\n")
    assert run_app(args=["pa", "run", str(bare), "--models", "m1"]) == 2
    assert capsys.readouterr().err == (
        f"promptgen: error: {bare}: has no test samples to run (set test_path: to a folder of "
        "sample files (.md, .markdown, .txt) beside it)\n"
    )
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "one.md").write_text("A sample.\n")
    bare.write_text("---\nprovider: openai\nmodel: m\ntest_path: tests\n---\nHi\n")
    env_free = ["pa", "run", str(bare), "--api-base", fake.url, "--out", str(tmp_path / "o")]
    assert run_app(args=env_free) == 2
    assert capsys.readouterr().err.endswith(
        "promptgen: error: pa run needs models under test (pass --models, e.g. "
        "--models openai/gpt-4o)\n"
    )
    assert fake.requests == []
