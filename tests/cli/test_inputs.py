"""Inputs and samples as users expect: `--var` fixes an input, testSamplesCount and
testSamplesShuffle choose the examples generation sees, and the author's expected
outputs are the accuracy reference where they exist (docs/runs.md).

Every call goes over real HTTP to the fake server; `promptgen` runs in a subprocess.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from promptgen import load_context
from tests.cli.test_pipeline import promptgen
from tests.fakellm import FakeLLM
from tests.pipeline_fake import PipelineResponder

TRANSLATE = """---
name: translate-note
inputs:
  note: {type: string, description: A short note to translate.}
  language: {type: string, description: The language to translate into.}
testSamples:
  - {note: "The shop opens at nine.", language: French, output: "AUTHOR-REF-1"}
  - {note: "Bring an umbrella.", language: Spanish, expected: "AUTHOR-REF-2"}
  - {note: "The train is late.", language: Italian}
%s---
system:
Translate the note into {{language}}. Answer with the translation only.

user:
{{note}}
"""

SUMMARIZE = """name: short-summary
model: openai/gpt-4o-mini
messages:
  - role: system
    content: Summarize the text in one sentence for a {{audience}} reader.
  - role: user
    content: "{{input}}"
testData:
  - audience: general
    input: The council voted to extend the bus route to the hospital.
    expected: AUTHOR-REF-YML
  - audience: technical
    input: Version 3 drops Python 3.8 and renames fetch_all.
"""


class ScoringJudge(PipelineResponder):
    """Accuracy is scored by what the reference says: 100 against an author's output
    (the marker AUTHOR-REF is in it), 40 against any other reference."""

    def answer(self, name: str, schema: dict[str, Any], text: str, n: int) -> Any:
        if name == "ScoreVerdict":
            reference = text.split("<REFERENCE>", 1)[-1].split("</REFERENCE>", 1)[0]
            score = 100 if "AUTHOR-REF" in reference else 40
            return {"explanation": f"scored {score}", "score": score}
        return super().answer(name, schema, text, n)


@pytest.fixture
def server() -> Iterator[tuple[FakeLLM, ScoringJudge]]:
    responder = ScoringJudge()
    with FakeLLM(responder=responder) as fake:
        yield fake, responder


def run(tmp: Path, fake: FakeLLM, prompt: Path, *args: str, out: str = "out"):  # type: ignore[no-untyped-def]
    base = ["--effort", "min", "--api-base", fake.url, "--out", str(tmp / out)]
    return promptgen(tmp, str(prompt), *base, "--quiet", *args)


def prompt_file(tmp: Path, extra: str = "", name: str = "translate.prompty") -> Path:
    path = tmp / name
    path.write_text(TRANSLATE % extra, encoding="utf-8")
    return path


def schema_name(body: dict[str, Any]) -> str:
    return ((body.get("response_format") or {}).get("json_schema") or {}).get("name", "")


def text_of(body: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content", "")) for m in body.get("messages", []))


def by_model(fake: FakeLLM, model: str) -> list[dict[str, Any]]:
    return [b for b in fake.requests if b.get("model") == model and not b.get("response_format")]


def sample_rows(fake: FakeLLM, schema: str) -> list[dict[str, Any]]:
    """The author's samples a generation request showed (the lines under the header)."""
    (body,) = [b for b in fake.requests if schema_name(b) == schema][:1]
    text = text_of(body)
    for header in ("Example inputs from the author:", "Example inputs supplied by the author"):
        if header in text:
            block = text.split(header, 1)[1].split("\n\n", 1)[0]
            return [json.loads(m) for m in re.findall(r"^- (\{.*\})$", block, re.M)]
    return []


def test_var_fixes_the_input_in_every_run_and_generation_leaves_it_alone(
    server: tuple[FakeLLM, ScoringJudge], tmp_path: Path
) -> None:
    fake, _ = server
    prompt = prompt_file(tmp_path)
    result = run(
        tmp_path, fake, prompt, "--var", "language=German", "--models", "m1",
        "--groundtruth-model", "oracle", "--max-tests-to-run", "100", "--export", "csv",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    ctx = load_context(tmp_path / "out" / "context.json")
    assert ctx.options["vars"] == {"language": "German"}
    # generation is told the input is fixed, and its answer schema does not ask for it
    generation = [b for b in fake.requests if schema_name(b) == "TestCases"]
    assert generation
    for body in generation:
        assert 'language = "German"' in text_of(body)
        inputs = body["response_format"]["json_schema"]["schema"]["$defs"]["Inputs"]
        assert list(inputs["properties"]) == ["note"]
    spec = next(b for b in fake.requests if schema_name(b) == "InputSpecAnswer")
    assert 'language (string) (fixed: "German" in every test)' in text_of(spec)
    generated = [t for t in ctx.tests if t.origin == "generated"]
    assert generated and all(set(t.inputs) == {"note"} for t in generated)
    # every run and every groundtruth answer is rendered with German, samples included
    evaluated = {r.test_id for r in ctx.test_runs}
    for model in ("m1", "oracle"):
        bodies = by_model(fake, model)
        assert bodies
        for body in bodies:
            system = body["messages"][0]["content"]
            assert system == "Translate the note into German. Answer with the translation only."
    assert len(by_model(fake, "m1")) == len(evaluated)
    # the samples' author outputs were written for French and Spanish: not references now
    samples = [t for t in ctx.tests if t.origin == "sample"]
    assert len(samples) == 3 and all(t.groundtruth_status == "ok" for t in samples)
    # the judges read the fixed value with the test's own input
    judged = [b for b in fake.requests if schema_name(b) == "ComplianceVerdict"]
    assert judged and all('"language": "German"' in text_of(b) for b in judged)
    # exports carry the rendered value: every row of the CSV export says German
    with (tmp_path / "out" / "exports" / "csv" / "tests.csv").open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == len(ctx.tests)
    assert {r["input.language"] for r in rows} == {"German"}


def test_var_from_the_frontmatter_and_a_flag_over_it(
    server: tuple[FakeLLM, ScoringJudge], tmp_path: Path
) -> None:
    fake, _ = server
    prompt = prompt_file(tmp_path, "vars: {language: Dutch}\n")
    result = run(tmp_path, fake, prompt, "--models", "m1", "--max-tests-to-run", "2")
    assert result.returncode == 0, result.stderr
    systems = {b["messages"][0]["content"] for b in by_model(fake, "m1")}
    assert systems == {"Translate the note into Dutch. Answer with the translation only."}

    fake.reset()
    again = run(
        tmp_path, fake, prompt, "--var", "language=Welsh", "--models", "m1",
        "--max-tests-to-run", "2", out="out2",
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    systems = {b["messages"][0]["content"] for b in by_model(fake, "m1")}
    assert systems == {"Translate the note into Welsh. Answer with the translation only."}


INPUTS = "its inputs: note, language"


@pytest.mark.parametrize(
    ("args", "extra", "expected"),
    [
        (["--var", "lang=German"], "", f"--var lang: the prompt has no input 'lang'; {INPUTS}"),
        ([], "vars: {tone: formal}\n",
         f"translate.prompty: frontmatter key vars tone: the prompt has no input 'tone'; {INPUTS}"),
        (["--var", "language"], "", "--var 'language' needs NAME=VALUE"),
        (["--var", "language=a", "--var", "language=b"], "", "--var language is given twice"),
        ([], "vars: {language: [a, b]}\n",
         "frontmatter: 'vars.language' should be a string, got a list"),
    ],
)  # fmt: skip
def test_a_bad_var_is_one_line_and_exit_2(
    server: tuple[FakeLLM, ScoringJudge],
    tmp_path: Path,
    args: list[str],
    extra: str,
    expected: str,
) -> None:
    fake, _ = server
    prompt = prompt_file(tmp_path, extra)
    result = run(tmp_path, fake, prompt, *args, "--models", "m1")
    assert result.returncode == 2, result.stderr
    assert expected in result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert fake.requests == []  # refused before any call


FIVE = """---
name: five-samples
inputs:
  text: {type: string}
testSamples:
  - {text: "sample one"}
  - {text: "sample two"}
  - {text: "sample three"}
  - {text: "sample four"}
  - {text: "sample five"}
  - {text: "sample six"}
%s---
Summarize: {{text}}
"""


def test_test_samples_count_and_shuffle_choose_the_examples(
    server: tuple[FakeLLM, ScoringJudge], tmp_path: Path
) -> None:
    fake, _ = server
    rows = [{"text": f"sample {n}"} for n in ("one", "two", "three", "four", "five", "six")]
    first_two = rows[:2]

    def shown(extra: str, *args: str, out: str) -> tuple[list[Any], list[Any]]:
        fake.reset()
        prompt = tmp_path / f"{out}.prompty"
        prompt.write_text(FIVE % extra, encoding="utf-8")
        result = run(tmp_path, fake, prompt, "--no-cache", *args, out=out)
        assert result.returncode == 0, result.stderr
        return sample_rows(fake, "InputSpecAnswer"), sample_rows(fake, "TestCases")

    spec, tests = shown("", out="default")  # PromptPex's default: the first five
    assert spec == tests == rows[:5]
    spec, tests = shown("", "--test-samples-count", "2", out="flag")
    assert spec == tests == first_two
    spec, tests = shown("testSamplesCount: 2\n", out="front")
    assert spec == tests == first_two
    spec, tests = shown("testSamplesCount: 2\ntestSamplesShuffle: true\n", out="shuffled")
    assert len(spec) == 2 and spec == tests and spec != first_two
    assert all(row in rows for row in spec) and spec[0] != spec[1]
    again, _ = shown("testSamplesCount: 2\ntestSamplesShuffle: true\n", "--fresh", out="shuffled")
    assert again == spec  # seeded by the prompt: the same samples every run
    none, _ = shown("", "--test-samples-count", "0", out="none")
    assert none == []
    assert not any("Example inputs" in text_of(b) for b in fake.requests)


def reference_column(out: Path) -> dict[str, str]:
    with (out / "tests.csv").open(encoding="utf-8") as handle:
        return {row["id"]: row["reference"] for row in csv.DictReader(handle)}


def accuracy_of(ctx: Any, test_id: str) -> list[float | None]:
    return [
        r.metrics["accuracy"].score
        for r in ctx.test_runs
        if r.test_id == test_id and "accuracy" in r.metrics
    ]


def test_author_outputs_are_the_reference_and_the_groundtruth_model_fills_the_rest(
    server: tuple[FakeLLM, ScoringJudge], tmp_path: Path
) -> None:
    fake, _ = server
    prompt = prompt_file(tmp_path)
    args = ("--models", "m1", "--groundtruth-model", "oracle", "--max-tests-to-run", "100")
    result = run(tmp_path, fake, prompt, *args)
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out"
    ctx = load_context(out / "context.json")
    evaluated = {r.test_id for r in ctx.test_runs}
    tests = [t for t in ctx.tests if t.id in evaluated]
    author = {t.id: t for t in tests if t.groundtruth_status == "author"}
    assert sorted(t.groundtruth for t in author.values()) == ["AUTHOR-REF-1", "AUTHOR-REF-2"]
    assert all(t.origin == "sample" and t.groundtruth_model is None for t in author.values())
    others = [t for t in tests if t.id not in author]
    # a generated test's own expected output is the generator's guess, not a reference
    assert any(t.origin == "generated" and t.expected_output for t in others)
    assert others and all(t.groundtruth_status == "ok" for t in others)
    assert all(t.groundtruth_model == "oracle" for t in others)
    oracle = by_model(fake, "oracle")
    # Three candidates per test without an author output: a request with n=3 (this fake
    # answers one choice), then the other two asked alone.
    assert [b.get("n") for b in oracle].count(3) == len(others)
    assert len(oracle) == 3 * len(others)
    assert not any("Bring an umbrella." in text_of(b) for b in oracle)
    # accuracy compares with whichever reference the test has (the judge scores 100
    # against an author's output, 40 against the groundtruth model's)
    for test in tests:
        assert accuracy_of(ctx, test.id) == [100.0 if test.id in author else 40.0]
    column = reference_column(out)
    assert {column[i] for i in author} == {"author"}
    assert {column[t.id] for t in others} == {"groundtruth:oracle"}
    assert f"reference    2 author-given, {len(others)} from groundtruth model oracle" in (
        result.stdout
    )
    tests_md = (out / "tests.md").read_text(encoding="utf-8")
    assert "| expected output | reference |" in tests_md and "| groundtruth:oracle |" in tests_md

    fake.reset()  # a re-run asks nothing again
    again = run(tmp_path, fake, prompt, *args)
    assert again.returncode == 0, again.stderr
    assert by_model(fake, "oracle") == []
    assert load_context(out / "context.json").tests == ctx.tests


def test_prompt_yml_expected_is_the_reference(
    server: tuple[FakeLLM, ScoringJudge], tmp_path: Path
) -> None:
    fake, responder = server
    responder.groundtruth_scores = [30]  # the groundtruth model's answer is never accepted
    prompt = tmp_path / "summary.prompt.yml"
    prompt.write_text(SUMMARIZE, encoding="utf-8")
    result = run(
        tmp_path, fake, prompt, "--samples-only", "--models", "m1",
        "--groundtruth-model", "oracle", "--groundtruth-retries", "0", "--export", "jsonl",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out"
    ctx = load_context(out / "context.json")
    by_audience = {t.inputs["audience"]: t for t in ctx.tests}
    given, asked = by_audience["general"], by_audience["technical"]
    assert (given.groundtruth_status, given.groundtruth) == ("author", "AUTHOR-REF-YML")
    assert asked.groundtruth_status == "invalid"
    assert len(by_model(fake, "oracle")) == 1
    assert accuracy_of(ctx, given.id) == [100.0]
    assert accuracy_of(ctx, asked.id) == []  # no reference, no accuracy
    assert reference_column(out) == {given.id: "author", asked.id: "invalid"}
    assert "reference    1 author-given, 1 invalid (no accepted groundtruth)" in result.stdout
    rows = [
        json.loads(line)
        for line in (out / "exports" / "jsonl" / "tests.jsonl").read_text().splitlines()
    ]
    exported = {r["id"]: (r["reference"], r["expected"]) for r in rows}
    assert exported == {given.id: ("author", "AUTHOR-REF-YML"), asked.id: ("invalid", None)}
