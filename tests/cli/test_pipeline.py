"""The main command end to end against a real HTTP server that plays every stage."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest

from promptgen import load_context
from promptgen.selection import inputs_sample, sample_tests
from tests.conftest import REPO
from tests.fakellm import FakeLLM
from tests.pipeline_fake import PipelineResponder

SAMPLES = sorted(
    p
    for pattern in ("*.prompty", "*.prompt.yml", "*.md", "*.txt")
    for p in (REPO / "samples").glob(pattern)
    if p.name != "README.md" and not p.name.endswith(".instructions.txt")
)
OUTPUTS = (
    "context.json",
    "intent.txt",
    "input_spec.txt",
    "rules.md",
    "tests.json",
    "tests.csv",
    "tests.md",
)


@pytest.fixture
def server() -> Iterator[tuple[FakeLLM, PipelineResponder]]:
    responder = PipelineResponder()
    with FakeLLM(responder=responder) as fake:
        yield fake, responder


def promptgen(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PROMPTGEN_", "OPENAI_"))}
    env["PROMPTGEN_CACHE_DIR"] = str(tmp / "cache")
    return subprocess.run(
        [sys.executable, "-m", "promptgen", *args],
        capture_output=True, text=True, cwd=REPO, env=env, timeout=300,
    )  # fmt: skip


def check_context(out: Path) -> None:
    """Everything written is there, valid, and consistent."""
    for name in OUTPUTS:
        assert (out / name).is_file(), name
    data = json.loads((out / "context.json").read_text())
    schema = json.loads((REPO / "schemas" / "context.schema.json").read_text())
    jsonschema.validate(data, schema)
    ctx = load_context(out / "context.json")
    assert ctx.intent and ctx.input_spec and ctx.rules
    assert len(ctx.inverse_rules) == len(ctx.rules)
    assert {r.inverse_of for r in ctx.inverse_rules} == {r.id for r in ctx.rules}
    ids = [t.id for t in ctx.tests]
    assert len(ids) == len(set(ids)), "duplicate tests"
    rules = {r.id: r for r in ctx.all_rules}
    for test in ctx.tests:
        if test.rule_id:
            assert test.inverse == rules[test.rule_id].inverse  # never mislabelled
        assert set(test.inputs) <= set(ctx.prompt.inputs)
    assert all(r.status == "done" for r in ctx.stages.values()), ctx.stages
    assert len(json.loads((out / "tests.json").read_text())["tests"]) == len(ctx.tests)


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.name)
def test_every_sample_at_min(
    server: tuple[FakeLLM, PipelineResponder], tmp_path: Path, sample: Path
) -> None:
    fake, _ = server
    out = tmp_path / "out"
    result = promptgen(
        tmp_path, str(sample), "--effort", "min", "--api-base", fake.url, "--out", str(out)
    )
    assert result.returncode == 0, result.stderr
    check_context(out)
    ctx = load_context(out / "context.json")
    assert ctx.options["effort"] == "min" and not ctx.options["groundedness"]
    assert "tests" in result.stdout and str(out) in result.stdout


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.name)
def test_every_sample_at_high(
    server: tuple[FakeLLM, PipelineResponder], tmp_path: Path, sample: Path
) -> None:
    fake, _ = server
    out = tmp_path / "out"
    args = ["--effort", "high", "--baseline-tests", "--api-base", fake.url, "--out", str(out)]
    result = promptgen(tmp_path, str(sample), *args)
    assert result.returncode == 0, result.stderr
    check_context(out)
    ctx = load_context(out / "context.json")
    origins = {t.origin for t in ctx.tests}
    assert {"generated", "expanded", "baseline"} <= origins
    dictated = {b.id: b.expected_output for b in ctx.behaviours if b.expected_output}
    for test in (t for t in ctx.tests if t.origin == "expanded"):
        parent = next(t for t in ctx.tests if t.id == test.parent_id)
        assert test.rule_id == parent.rule_id and test.original_inputs
        assert test.behaviours == parent.behaviours
        said = [dictated[b] for b in test.behaviours if b in dictated]
        if said:  # the output the prompt dictates for the case ("negative", "[]")
            assert test.expected_output == said[0] == parent.expected_output
        else:  # recomputed, not stale
            assert test.expected_output != parent.expected_output
    assert all(t.valid is not None for t in ctx.tests)
    assert all(r.grounded is not None for r in ctx.rules)
    generated = sum(t.origin == "generated" for t in ctx.tests)
    assert sum(t.origin == "baseline" for t in ctx.tests) == generated  # same count
    if ctx.prompt.scenarios:
        assert {t.scenario for t in ctx.tests if t.origin == "generated"} == {
            s.name for s in ctx.prompt.scenarios
        }
        for test in (t for t in ctx.tests if t.scenario is not None):
            # inputs fixed by the scenario are not generated
            fixed = next(s.parameters for s in ctx.prompt.scenarios if s.name == test.scenario)
            assert not set(fixed) & set(test.inputs)
    # the author's test samples, and the inputs' own samples as one more test
    authors = sample_tests(ctx.prompt)
    assert sum(t.origin == "sample" for t in ctx.tests) == len(authors)
    assert len(authors) == len(ctx.prompt.test_samples) + (inputs_sample(ctx.prompt) is not None)


def test_frontmatter_instructions_reach_the_stages(
    server: tuple[FakeLLM, PipelineResponder], tmp_path: Path
) -> None:
    fake, _ = server
    args = ["--effort", "min", "--api-base", fake.url, "--out", str(tmp_path / "o")]
    args += ["--instructions-tests", "Prefer questions about invoices."]
    result = promptgen(tmp_path, "samples/sql-from-question.prompty", *args)
    assert result.returncode == 0, result.stderr
    from promptgen import load_prompt

    instructions = load_prompt(REPO / "samples/sql-from-question.prompty").instructions
    sent = "\n".join(json.dumps(body) for body in fake.requests)
    for text in (instructions.intent, instructions.input_spec, instructions.output_rules):
        assert text and json.dumps(text)[1:40] in sent
    assert "Prefer questions about invoices." in sent


def test_dry_run_calls_nothing(server: tuple[FakeLLM, PipelineResponder], tmp_path: Path) -> None:
    fake, _ = server
    args = ["--effort", "medium", "--dry-run", "--api-base", fake.url, "--out", str(tmp_path / "o")]
    result = promptgen(tmp_path, "samples/translate-support-reply.prompty", *args)
    assert result.returncode == 0, result.stderr
    assert fake.requests == [] and not (tmp_path / "o").exists()
    for stage in ("intent", "rules", "safety", "tests", "expand", "screen", "validity", "total"):
        assert stage in result.stdout


def test_precedence_flag_over_frontmatter_over_effort(tmp_path: Path) -> None:
    prompt = tmp_path / "p.prompty"
    prompt.write_text("---\nname: p\ntestsPerRule: 5\nmaxRules: 2\n---\nuser:\n{{q}}\n")
    result = promptgen(
        tmp_path, str(prompt), "--effort", "high", "--max-rules", "7", "--print-options"
    )
    assert result.returncode == 0, result.stderr
    rows = {line.split()[0]: line.split()[1:] for line in result.stdout.splitlines()[1:]}
    assert rows["max_rules"] == ["7", "command", "line"]
    assert rows["tests_per_rule"] == ["5", "frontmatter"]
    assert rows["test_expansions"] == ["1", "effort", "high"]
    assert rows["baseline_tests"] == ["False", "default"]


@pytest.mark.parametrize(
    ("failing", "redo"),
    # The tests are screened once they exist; the prompt's safety verdict is kept.
    [
        ("TestCases", {"TestCases", "Screening"}),
        ("RulesAnswer", {"RulesAnswer", "InverseAnswer", "TestCases", "Screening"}),
    ],
)
def test_provider_failure_keeps_work_and_resumes(
    tmp_path: Path, failing: str, redo: set[str]
) -> None:
    out = tmp_path / "out"
    args = ["samples/classify-sentiment.prompty", "--effort", "min", "--out", str(out)]
    with FakeLLM(responder=PipelineResponder(fail_stage=failing)) as fake:
        result = promptgen(tmp_path, *args, "--api-base", fake.url)
    assert result.returncode == 3
    assert "re-run the same command" in result.stderr and "Traceback" not in result.stderr
    ctx = load_context(out / "context.json")
    assert ctx.intent and ctx.stages["tests"].status in ("failed", "skipped")
    if failing == "RulesAnswer":  # nothing that needs the rules ran on without them
        assert ctx.stages["inverse_rules"].status == "skipped" and not ctx.inverse_rules
    with FakeLLM(responder=PipelineResponder()) as fake:
        again = promptgen(tmp_path, *args, "--api-base", fake.url)
        names = [
            b.get("response_format", {}).get("json_schema", {}).get("name") for b in fake.requests
        ]
    assert again.returncode == 0, again.stderr
    assert "resuming" in again.stderr
    assert set(names) == redo  # only the unfinished work was asked for
    check_context(out)


def test_different_prompt_in_the_same_folder_is_refused(
    server: tuple[FakeLLM, PipelineResponder], tmp_path: Path
) -> None:
    fake, _ = server
    out = ["--out", str(tmp_path / "o"), "--api-base", fake.url, "--effort", "min"]
    assert promptgen(tmp_path, "samples/haiku.md", *out).returncode == 0
    refused = promptgen(tmp_path, "samples/classify-sentiment.prompty", *out)
    assert refused.returncode == 2
    assert "different prompt" in refused.stderr and "--fresh" in refused.stderr
    assert (
        promptgen(tmp_path, "samples/classify-sentiment.prompty", *out, "--fresh").returncode == 0
    )


def test_context_json_resumes_with_overrides(
    server: tuple[FakeLLM, PipelineResponder], tmp_path: Path
) -> None:
    fake, _ = server
    out = tmp_path / "o"
    base = ["--api-base", fake.url]
    assert (
        promptgen(
            tmp_path, "samples/haiku.md", "--effort", "min", "--out", str(out), *base
        ).returncode
        == 0
    )
    again = promptgen(tmp_path, str(out / "context.json"), "--validity", *base)
    assert again.returncode == 0, again.stderr
    assert "override" in again.stderr and "validity" in again.stderr
    ctx = load_context(out / "context.json")
    assert ctx.option_sources["validity"] == "command line"
    assert all(t.valid is not None for t in ctx.tests)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nope.prompty"], "file not found"),
        (["samples/data"], "no prompt found"),  # a folder of data files only
        (["samples/haiku.md", "--effort", "extreme"], "effort"),
    ],
)
def test_cli_error_paths(tmp_path: Path, args: list[str], message: str) -> None:
    result = promptgen(tmp_path, *args)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_bad_context_file(tmp_path: Path) -> None:
    bad = tmp_path / "context.json"
    bad.write_text("{broken")
    result = promptgen(tmp_path, str(bad))
    assert result.returncode == 2 and "not valid JSON" in result.stderr


def test_an_inverse_that_copies_its_rule_is_asked_again(tmp_path: Path) -> None:
    responder = PipelineResponder(copy_first_inverse=True)
    with FakeLLM(responder=responder) as fake:
        args = ["--effort", "min", "--api-base", fake.url, "--out", str(tmp_path / "o")]
        result = promptgen(tmp_path, "samples/haiku.md", *args)
    assert result.returncode == 0, result.stderr
    ctx = load_context(tmp_path / "o" / "context.json")
    assert responder.calls["InverseAnswer"] == 2
    texts = {r.id: r.text for r in ctx.rules}
    assert all(inv.text != texts[inv.inverse_of] for inv in ctx.inverse_rules)
    assert len(ctx.inverse_rules) == len(ctx.rules)
