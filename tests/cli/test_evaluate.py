"""Evaluation end to end: models under test, groundtruth, metrics, checks, gate, re-runs.

Every call goes over real HTTP to the fake server; `promptgen` runs in a subprocess.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from promptgen import Options, load_context, prepare
from promptgen import run as run_prompt
from promptgen.options import Evaluation, Models, Run
from promptgen.progress import RichReporter
from tests.cli.test_pipeline import promptgen
from tests.fakellm import FakeLLM
from tests.pipeline_fake import PipelineResponder

SAMPLE = "samples/classify-sentiment.prompty"
GENERATION = ("IntentAnswer", "InputSpecAnswer", "RulesAnswer", "InverseAnswer", "TestCases")


@pytest.fixture
def server() -> Iterator[tuple[FakeLLM, PipelineResponder]]:
    responder = PipelineResponder()
    with FakeLLM(responder=responder) as fake:
        yield fake, responder


def evaluate(tmp: Path, fake: FakeLLM, *args: str, prompt: str = SAMPLE, out: str = "out"):  # type: ignore[no-untyped-def]
    base = ["--effort", "min", "--api-base", fake.url, "--out", str(tmp / out), "--quiet"]
    return promptgen(tmp, prompt, *base, *args)


def under_test(fake: FakeLLM) -> list[dict]:
    return [b for b in fake.requests if not b.get("response_format") and "<PROMPT>" not in str(b)]


def test_two_models_two_judges_two_runs(
    server: tuple[FakeLLM, PipelineResponder], tmp_path: Path
) -> None:
    fake, _ = server
    result = evaluate(
        tmp_path,
        fake,
        "--models", "m1;m2", "--eval-models", "j1", "--eval-models", "j2",
        "--runs-per-test", "2", "--max-tests-to-run", "3",
        "--check", "contains=answer", "--check", "not-icontains=violation",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out"
    ctx = load_context(out / "context.json")
    assert ctx.options["models"] == ["m1", "m2"]
    tested = {r.test_id for r in ctx.test_runs}
    assert len(tested) == 3
    assert Counter(r.model for r in ctx.test_runs) == {"m1": 6, "m2": 6}
    assert {r.run_index for r in ctx.test_runs} == {0, 1}
    assert all(r.ok for r in ctx.test_runs)
    # runs of the same test differ: each run index is its own call, not a cache hit
    bodies = under_test(fake)
    assert len(bodies) == 12
    names = {m.name: m.kind for m in ctx.metrics}
    assert names["compliance"] == "compliance"
    assert names["classify-sentiment-compliance"] == "custom"  # found beside the prompt
    assert names["contains=answer"] == names["not-icontains=violation"] == "check"
    per_run = Counter((r.test_id, r.model, r.run_index) for r in ctx.metric_results)
    # compliance + custom metric on two judges, plus two checks without a judge, plus
    # the class check on a test written for an output class
    classed = {t.id for t in ctx.tests if t.expected_class}
    assert {k: 7 if k[0] in classed else 6 for k in per_run} == per_run
    assert classed & tested
    judges = {r.judge for r in ctx.metric_results if r.metric == "compliance"}
    assert judges == {"j1", "j2"}
    for run in ctx.test_runs:
        assert run.metrics["compliance"].outcome == "ok"
        assert run.metrics["compliance"].judges == 2
        assert run.metrics["classify-sentiment-compliance"].score == 75.0
        assert run.metrics["contains=answer"].outcome == "ok"
    for name in ("overview.csv", "report.md", "report.html"):
        assert (out / name).is_file(), name
    assert "compliance 100.0%" in result.stdout


def test_the_judge_sees_the_input(
    server: tuple[FakeLLM, PipelineResponder], tmp_path: Path
) -> None:
    fake, _ = server
    result = evaluate(tmp_path, fake, "--models", "m1", "--max-tests-to-run", "2")
    assert result.returncode == 0, result.stderr
    ctx = load_context(tmp_path / "out" / "context.json")
    judged = [b for b in fake.requests if "ComplianceVerdict" in json.dumps(b)]
    assert len(judged) == 2
    for test in (t for t in ctx.tests if t.id in {r.test_id for r in ctx.test_runs}):
        value = next(iter(test.inputs.values()))
        assert any(value in json.dumps(b) for b in judged), "the judge never saw the input"


def test_a_failing_model_is_recorded_and_rerun_only_where_it_failed(
    server: tuple[FakeLLM, PipelineResponder], tmp_path: Path
) -> None:
    fake, responder = server
    responder.failing_models = {"flaky": 2}
    args = ("--models", "good;flaky", "--max-tests-to-run", "4")
    first = evaluate(tmp_path, fake, *args)
    assert first.returncode == 3, first.stderr
    said = r"2 of \d+ evaluation calls failed \(\d+\.\d% > 0\.0% allowed by --fail-on-error\), "
    assert re.search(said + "e.g. flaky: Error code: 400", first.stderr), first.stderr
    assert "Traceback" not in first.stderr
    assert "cut off" not in first.stderr  # the hint for cut-off answers is not this one's
    ctx = load_context(tmp_path / "out" / "context.json")
    failed = [r for r in ctx.test_runs if r.error]
    assert len(failed) == 2 and all(r.model == "flaky" for r in failed)
    assert all(r.ok for r in ctx.test_runs if r.model == "good")  # the run went on
    assert ctx.stage("runs").status == "failed"

    responder.failing_models = {}
    before = len(under_test(fake))
    again = evaluate(tmp_path, fake, *args)
    assert again.returncode == 0, again.stderr
    ctx = load_context(tmp_path / "out" / "context.json")
    assert all(r.ok for r in ctx.test_runs) and len(ctx.test_runs) == 8
    asked = under_test(fake)[before:]
    assert len(asked) == 2 and {b["model"] for b in asked} == {"flaky"}


def test_fail_on_error_tolerates_a_share_of_failures(
    server: tuple[FakeLLM, PipelineResponder], tmp_path: Path
) -> None:
    fake, responder = server
    responder.failing_models = {"flaky": 2}
    args = ("--models", "good;flaky", "--max-tests-to-run", "4", "--fail-on-error", "0.2")
    result = evaluate(tmp_path, fake, *args)
    assert result.returncode == 0, result.stderr  # 2 failed of 8 runs + 6 verdicts
    strict = evaluate(tmp_path, fake, *args[:-1], "0")
    assert strict.returncode == 3, strict.stderr


def test_groundtruth_candidates_are_fresh_variants_asked_at_once(
    server: tuple[FakeLLM, PipelineResponder], tmp_path: Path
) -> None:
    fake, responder = server
    responder.groundtruth_scores = [40, 60, 85]  # in the order the judgements arrive
    result = evaluate(
        tmp_path,
        fake,
        "--models", "m1", "--max-tests-to-run", "1",
        "--groundtruth-model", "oracle", "--groundtruth-retries", "3",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    ctx = load_context(tmp_path / "out" / "context.json")
    (test,) = [t for t in ctx.tests if t.groundtruth_status]
    attempts = [a for a in ctx.groundtruth if a.test_id == test.id]
    assert [a.attempt for a in attempts] == [0, 1, 2, 3]
    assert sorted(a.average or 0 for a in attempts) == [40, 60, 85, 85]
    assert sum(a.accepted for a in attempts) == 2
    # The fake answers one choice: the request with n=4, then the three others alone,
    # every answer before the first judgement.
    asked = [b for b in under_test(fake) if b["model"] == "oracle"]
    assert [b.get("n") for b in asked] == [4, None, None, None]
    assert len({b.get("seed") for b in asked}) == 4  # a fresh variant each
    names = [
        (b.get("response_format") or {}).get("json_schema", {}).get("name") for b in fake.requests
    ]
    last_answer = max(i for i, b in enumerate(fake.requests) if b["model"] == "oracle")
    assert last_answer < names.index("GroundtruthScore")
    kept = min((a for a in attempts if a.accepted), key=lambda a: a.attempt)
    assert test.groundtruth_status == "ok" and test.groundtruth_score == 85
    assert test.groundtruth == kept.output and test.groundtruth_model == "oracle"
    (run,) = ctx.test_runs
    assert run.metrics["accuracy"].score == 75


def test_a_failed_candidate_beside_an_accepted_one_fails_no_run(
    server: tuple[FakeLLM, PipelineResponder], tmp_path: Path
) -> None:
    """The settled test's failed candidate is never asked again, so it is no work left:
    neither this run nor a re-run exits 3 for it (the gate counts outstanding work)."""
    fake, responder = server
    responder.failing_models = {"oracle": 2}  # two of the four candidates fail
    args = ("--models", "m1", "--max-tests-to-run", "1", "--groundtruth-model", "oracle")
    first = evaluate(tmp_path, fake, *args, "--groundtruth-retries", "3")
    ctx = load_context(tmp_path / "out" / "context.json")
    failed = [a.error for a in ctx.groundtruth if a.error]
    assert failed == ["oracle: Error code: 400 - fake error 400 (HTTP 400, 1 attempt(s))"] * 2
    assert [t.groundtruth_status for t in ctx.tests if t.groundtruth_status] == ["ok"]
    assert first.returncode == 0, first.stderr
    before = len(fake.requests)
    again = evaluate(tmp_path, fake, *args, "--groundtruth-retries", "3")
    assert again.returncode == 0, again.stderr
    assert len(fake.requests) == before  # nothing was left to ask


def test_groundtruth_never_good_enough_is_invalid(
    server: tuple[FakeLLM, PipelineResponder], tmp_path: Path
) -> None:
    fake, responder = server
    responder.groundtruth_scores = [30, 55, 20]
    result = evaluate(
        tmp_path,
        fake,
        "--models", "m1", "--max-tests-to-run", "1", "--groundtruth-model", "oracle",
        "--groundtruth-retries", "2", "--groundtruth-threshold", "70",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    ctx = load_context(tmp_path / "out" / "context.json")
    (test,) = [t for t in ctx.tests if t.groundtruth_status]
    assert test.groundtruth_status == "invalid"
    assert test.groundtruth_score == 55  # the best answer is kept
    (run,) = ctx.test_runs
    assert "accuracy" not in run.metrics  # no accuracy against a rejected groundtruth


def test_quality_gate_and_junit(server: tuple[FakeLLM, PipelineResponder], tmp_path: Path) -> None:
    fake, responder = server
    responder.bad_every = 2
    junit = tmp_path / "junit.xml"
    args = ("--models", "m1", "--max-tests-to-run", "4", "--junit", str(junit))
    low = evaluate(tmp_path, fake, *args, "--fail-under", "80")
    assert low.returncode == 1, low.stderr
    assert "below --fail-under 80%" in low.stderr
    ctx = load_context(tmp_path / "out" / "context.json")
    outcomes = Counter(r.metrics["compliance"].outcome for r in ctx.test_runs)
    assert outcomes == {"ok": 2, "err": 2}
    suites = ET.parse(junit).getroot()
    cases = suites.findall(".//testcase")
    assert len(cases) == 4
    # a case fails on the judge's err, or on the class check: the fake's model under
    # test never answers a class, so every test that expects one fails it
    tests = {t.id: t for t in ctx.tests}
    failing = [
        r for r in ctx.test_runs
        if r.metrics["compliance"].outcome == "err" or tests[r.test_id].expected_class
    ]  # fmt: skip
    classed = [r for r in ctx.test_runs if tests[r.test_id].expected_class]
    assert classed
    # the 2 err verdicts, plus the class tests the judge passed (which of the runs gets an
    # err depends on the order the concurrent judge calls arrive in)
    judged_ok = sum(r.metrics["compliance"].outcome == "ok" for r in classed)
    assert len([c for c in cases if c.find("failure") is not None]) == len(failing)
    assert len(failing) == 2 + judged_ok
    for run in (r for r in ctx.test_runs if r not in failing):  # e.g. the prompt's own sample
        assert run.metrics["compliance"].outcome == "ok" and run not in classed
    label = tests[classed[0].test_id].expected_class
    assert classed[0].metrics["expected_class"].outcome == "err"
    assert f"expected {label!r}; the output starts 'm1 answer" in ET.tostring(suites, "unicode")
    ok = evaluate(tmp_path, fake, *args, "--fail-under", "50")
    assert ok.returncode == 0, ok.stderr
    report = (tmp_path / "out" / "report.md").read_text()
    assert "breaks rule 1" in report  # the judge's reason beside the failing output


def test_reevaluating_a_saved_context_on_another_model(
    server: tuple[FakeLLM, PipelineResponder], tmp_path: Path
) -> None:
    fake, responder = server
    first = evaluate(tmp_path, fake, "--models", "m1", "--max-tests-to-run", "3")
    assert first.returncode == 0, first.stderr
    generation = {k: v for k, v in responder.calls.items() if k in GENERATION}
    saved = tmp_path / "out" / "context.json"
    result = promptgen(tmp_path, str(saved), "--api-base", fake.url, "--models", "m2", "-q")
    assert result.returncode == 0, result.stderr
    assert {k: v for k, v in responder.calls.items() if k in GENERATION} == generation
    ctx = load_context(saved)
    assert Counter(r.model for r in ctx.test_runs) == {"m1": 3, "m2": 3}
    assert {r.test_id for r in ctx.test_runs if r.model == "m1"} == {
        r.test_id for r in ctx.test_runs if r.model == "m2"
    }
    html = (tmp_path / "out" / "report.html").read_text()
    assert "m1" in html and "m2" in html


def test_no_evals_generates_only(server: tuple[FakeLLM, PipelineResponder], tmp_path: Path) -> None:
    fake, _ = server
    result = evaluate(tmp_path, fake, "--models", "m1", "--no-evals")
    assert result.returncode == 0, result.stderr
    ctx = load_context(tmp_path / "out" / "context.json")
    assert ctx.tests and not ctx.test_runs and not under_test(fake)


METRIC = """---
name: {name}
tags: [{tags}]
inputs:
  output: {{type: string}}
---
system:
Rate the answer. Reply as JSON with explanation and score.
user:
{{{{output}}}}
"""


def test_custom_metric_discovery_and_inline_metrics(
    server: tuple[FakeLLM, PipelineResponder], tmp_path: Path
) -> None:
    fake, _ = server
    folder = tmp_path / "prompts"
    folder.mkdir()
    prompt = folder / "greet.prompty"
    prompt.write_text("---\nname: greet\n---\nsystem:\nGreet {{name}} warmly.\n")
    (folder / "other.prompty").write_text("---\nname: other\n---\nsystem:\nSay {{x}}.\n")
    (folder / "greet.metric.prompty").write_text(METRIC.format(name="mine", tags="scorer"))
    (folder / "greet.tone.metric.prompty").write_text(METRIC.format(name="tone", tags="scorer"))
    (folder / "shared.metric.prompty").write_text(METRIC.format(name="shared", tags="scorer"))
    (folder / "other.metric.prompty").write_text(METRIC.format(name="theirs", tags="scorer"))
    extra = tmp_path / "elsewhere.metric.prompty"
    extra.write_text(METRIC.format(name="extra", tags="scorer"))
    result = evaluate(
        tmp_path,
        fake,
        "--models", "m1", "--max-tests-to-run", "2", "--metric", str(extra),
        "--custom-metric", "Is the greeting polite? Answer OK or ERR.",
        prompt=str(prompt),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    ctx = load_context(tmp_path / "out" / "context.json")
    names = {m.name for m in ctx.metrics}
    assert names == {"compliance", "mine", "tone", "shared", "extra", "custom-1", "expected_class"}
    for run in ctx.test_runs:
        assert run.metrics["custom-1"].outcome == "ok"
        assert run.metrics["mine"].score == 75


def test_frontmatter_checks_and_a_bad_check(
    server: tuple[FakeLLM, PipelineResponder], tmp_path: Path
) -> None:
    fake, _ = server
    prompt = tmp_path / "p.prompty"
    prompt.write_text(
        "---\nname: p\nchecks:\n  - starts-with: m1\n  - word-count: {min: 3, max: 40}\n"
        "  - regex: '^m1 answer \\d+'\n  - not-contains: VIOLATION\n"
        "  - language: en\n---\nsystem:\nEcho {{text}}.\n"
    )
    result = evaluate(
        tmp_path, fake, "--models", "m1", "--max-tests-to-run", "2", "--no-compliance",
        prompt=str(prompt),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    ctx = load_context(tmp_path / "out" / "context.json")
    assert {m.kind for m in ctx.metrics} == {"check"}
    assert not [b for b in fake.requests if "ComplianceVerdict" in json.dumps(b)]
    for run in ctx.test_runs:
        outcomes = {n: s.outcome for n, s in run.metrics.items()}
        assert outcomes["starts-with=m1"] == "ok", run.output
        assert outcomes['word-count={"min": 3, "max": 40}'] == "ok"
        assert outcomes["not-contains=VIOLATION"] == "ok"
    bad = tmp_path / "bad.prompty"
    bad.write_text("---\nname: b\nchecks:\n  - contains: x\n  - sounds-nice: yes\n---\nHi {{a}}\n")
    failed = evaluate(tmp_path, fake, "--models", "m1", prompt=str(bad), out="bad")
    assert failed.returncode == 2
    assert f"{bad}:5: unknown check 'sounds-nice'" in failed.stderr
    assert "Traceback" not in failed.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--metric", "missing.metric.prompty"), "metric file not found"),
        (("--check", "contains"), "needs a value"),
        (("--param", "temperature"), "needs KEY=VALUE"),
        (("--custom-metric", "Judge {{secret}} please"), "does not provide"),
    ],
)
def test_bad_evaluation_input_is_one_line(
    server: tuple[FakeLLM, PipelineResponder], tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    fake, _ = server
    result = evaluate(tmp_path, fake, "--models", "m1", *args)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], result.stderr
    assert not fake.requests  # nothing was called before the error


def test_model_parameters_reach_the_model_under_test(
    server: tuple[FakeLLM, PipelineResponder], tmp_path: Path
) -> None:
    fake, _ = server
    prompt = tmp_path / "p.prompty"
    prompt.write_text(
        "---\nname: p\nmodel:\n  parameters: {temperature: 0.3, max_tokens: 77, top_p: 0.5}\n"
        "inputs:\n  text: {type: string}\n  tone: {type: string, default: calm}\n"
        "scenarios:\n  - name: cold\n    parameters: {tone: icy}\n"
        "---\nsystem:\nAnswer {{text}} in a {{tone}} tone.\n"
    )
    result = evaluate(
        tmp_path, fake, "--models", "m1", "--max-tests-to-run", "1", "--param", "top_p=0.9",
        prompt=str(prompt),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    (body,) = under_test(fake)
    assert body["temperature"] == 0.3 and body["max_tokens"] == 77 and body["top_p"] == 0.9
    assert "icy tone" in json.dumps(body["messages"])  # the scenario's parameter applies


def test_arguments_are_defaults_then_scenario_then_test() -> None:
    from promptgen.model import PromptInput, PromptUnderTest, Scenario
    from promptgen.prompting.invoke import test_arguments
    from promptgen.results import Test

    prompt = PromptUnderTest(
        name="p",
        inputs={
            "a": PromptInput(name="a", default="A0"),
            "b": PromptInput(name="b", default="B0"),
            "c": PromptInput(name="c", default="C0"),
        },
        scenarios=[Scenario(name="s", parameters={"b": "B1", "c": "C1"})],
    )
    test = Test(id="t", scenario="s", inputs={"c": "C2"})
    assert test_arguments(prompt, test) == {"a": "A0", "b": "B1", "c": "C2"}


def test_review_filter_and_evaluate_the_filtered_tests(
    server: tuple[FakeLLM, PipelineResponder], tmp_path: Path
) -> None:
    fake, responder = server
    first = evaluate(tmp_path, fake, "--rate-tests", "--filter-tests", "2")
    assert first.returncode == 0, first.stderr
    out = tmp_path / "out"
    assert (out / "test_review.md").is_file()
    filtered = json.loads((out / "tests.filtered.json").read_text())
    assert len(filtered["tests"]) == 2
    generation = {k: v for k, v in responder.calls.items() if k in GENERATION}
    later = evaluate(
        tmp_path, fake, "--tests", str(out / "tests.filtered.json"), "--models", "m1",
        out="later",
    )  # fmt: skip
    assert later.returncode == 0, later.stderr
    ctx = load_context(tmp_path / "later" / "context.json")
    assert {r.test_id for r in ctx.test_runs} == {t["id"] for t in filtered["tests"]}
    assert responder.calls.get("TestCases") == generation.get("TestCases")  # none generated


EVERY_CHECK = """---
name: every-check
checks:
  - not-equals: nope
  - contains: answer
  - icontains: ANSWER
  - contains-any: [zzz, answer]
  - icontains-any: [ZZZ, ANSWER]
  - contains-all: [m1, answer]
  - icontains-all: [M1, ANSWER]
  - starts-with: m1
  - istarts-with: M1
  - ends-with: words
  - iends-with: WORDS
  - regex: {pattern: '^M1 ANSWER \\d+', flags: i}
  - not-is-json: {}
  - word-count: {min: 5, max: 10}
  - line-count: 1
  - sentence-count: 1
  - paragraph-count: 1
  - character-count: {max: 60}
  - not-language: fr
  - levenshtein: {value: m1 answer 1 to 12 words, threshold: 10}
  - equals: nope
---
system:
Echo {{text}}.
"""


def test_every_deterministic_check_end_to_end(
    server: tuple[FakeLLM, PipelineResponder], tmp_path: Path
) -> None:
    fake, _ = server
    prompt = tmp_path / "every.prompty"
    prompt.write_text(EVERY_CHECK)
    args = ("--models", "m1", "--max-tests-to-run", "2", "--no-compliance")
    result = evaluate(
        tmp_path, fake, *args, "--check", "not-icontains=VIOLATION", prompt=str(prompt)
    )
    assert result.returncode == 0, result.stderr
    ctx = load_context(tmp_path / "out" / "context.json")
    assert len(ctx.metrics) == 22 and not judged(fake)
    for run in ctx.test_runs:
        outcomes = {name: s.outcome for name, s in run.metrics.items()}
        assert outcomes.pop("equals=nope") == "err"
        assert set(outcomes.values()) == {"ok"}, (run.output, outcomes)
        # a check scores pass/fail; its own measure (6 words) stays in the reason
        count = run.metrics['word-count={"min": 5, "max": 10}']
        assert count.score == 100.0
    results = [r for r in ctx.metric_results if r.metric == "word-count"]
    assert all(r.judge is None and r.reason for r in ctx.metric_results), results


def judged(fake: FakeLLM) -> list[dict]:
    return [b for b in fake.requests if "Verdict" in json.dumps(b.get("response_format"))]


GH_PROMPT = """name: echo
model: openai/gpt-4o
messages:
  - role: user
    content: 'Echo: {{text}}'
testData:
  - text: first
    needle: answer
  - text: second
    needle: nowhere
evaluators:
  - name: has needle
    string:
      contains: '{{needle}}'
  - name: starts right
    string:
      startsWith: M1
  - name: judge
    uses: github/similarity
"""


def test_github_models_string_evaluators_become_checks(
    server: tuple[FakeLLM, PipelineResponder], tmp_path: Path
) -> None:
    """`string:` evaluators run as checks; `{{name}}` in them takes each test's value."""
    fake, _ = server
    prompt = tmp_path / "echo.prompt.yml"
    prompt.write_text(GH_PROMPT)
    result = evaluate(tmp_path, fake, "--models", "m1", "--no-compliance", prompt=str(prompt))
    assert result.returncode == 0, result.stderr
    ctx = load_context(tmp_path / "out" / "context.json")
    # The evaluators' own names are kept.
    assert {m.name for m in ctx.metrics} == {"has needle", "starts right"}
    by_text = {}
    for run in ctx.test_runs:
        test = ctx.test(run.test_id)
        assert test is not None
        by_text[test.inputs.get("text")] = run.metrics["has needle"].outcome
        assert run.metrics["starts right"].outcome == "ok"
    assert by_text["first"] == "ok" and by_text["second"] == "err"  # samples carry needles
    generated = [r for r in ctx.metric_results if r.outcome == "unknown"]
    assert all("needs {{needle}}" in (r.reason or "") for r in generated)


def test_runs_are_judged_while_other_cells_still_run(
    server: tuple[FakeLLM, PipelineResponder], tmp_path: Path
) -> None:
    """A finished cell is judged at once, not after the slowest model's cells."""
    fake, responder = server
    responder.slow_models = {"slow": 1.5}
    result = evaluate(tmp_path, fake, "--models", "fast;slow", "--max-tests-to-run", "2")
    assert result.returncode == 0, result.stderr
    slow_sent = max(t for t, name in responder.log if name == "slow")
    judged = sorted(t for t, name in responder.log if name == "ComplianceVerdict")
    assert len(judged) == 4
    assert judged[0] < slow_sent + 1.0  # the fast model's outputs were judged meanwhile


def _overview_rows(out: Path) -> dict[tuple[str, str], dict[str, str]]:
    import csv

    with (out / "overview.csv").open(encoding="utf-8") as handle:
        return {(r["model"], r["scenario"]): r for r in csv.DictReader(handle)}


def test_a_new_model_on_a_saved_context_fills_every_column_and_is_gated(
    server: tuple[FakeLLM, PipelineResponder], tmp_path: Path
) -> None:
    """Defect A: the new model's compliance was empty and the gate ignored it."""
    fake, responder = server
    first = evaluate(tmp_path, fake, "--models", "m1", "--max-tests-to-run", "3")
    assert first.returncode == 0, first.stderr
    saved = tmp_path / "out" / "context.json"
    responder.bad_every = 1  # every output of the new model breaks a rule
    result = promptgen(
        tmp_path, str(saved), "--api-base", fake.url, "--models", "m2", "-q", "--fail-under", "60"
    )
    ctx = load_context(saved)
    new_runs = [r for r in ctx.test_runs if r.model == "m2"]
    assert len(new_runs) == 3
    assert all(r.metrics["compliance"].outcome == "err" for r in new_runs)
    rows = _overview_rows(tmp_path / "out")
    assert float(rows[("m1", "(all)")]["compliance"]) == 100.0
    assert float(rows[("m2", "(all)")]["compliance"]) == 0.0
    assert "m2" in (tmp_path / "out" / "report.md").read_text()
    # m1 100 %, m2 0 %: overall 50 %, below 60, so the gate counts the new model.
    assert result.returncode == 1, result.stderr
    assert "50.0%" in result.stderr


def test_a_run_resumed_after_a_failed_early_stage_scores_every_run(
    tmp_path: Path,
) -> None:
    """Defect A, second form: metrics recorded as done with 0 calls kept `compliance -`."""
    responder = PipelineResponder(fail_stage="InputSpecAnswer")
    with FakeLLM(responder=responder) as fake:
        first = evaluate(tmp_path, fake, "--models", "m1", "--max-tests-to-run", "3")
        assert first.returncode == 3
        responder.fail_stage = None
        second = evaluate(tmp_path, fake, "--models", "m1", "--max-tests-to-run", "3")
        assert second.returncode == 0, second.stderr
    ctx = load_context(tmp_path / "out" / "context.json")
    assert len(ctx.test_runs) == 3
    assert all(r.metrics["compliance"].outcome == "ok" for r in ctx.test_runs)
    rows = _overview_rows(tmp_path / "out")
    assert float(rows[("m1", "(all)")]["compliance"]) == 100.0


def test_tests_file_into_a_new_folder_keeps_its_rules(
    server: tuple[FakeLLM, PipelineResponder], tmp_path: Path
) -> None:
    """Defect B: the rules stage ran again in the new folder and orphaned the tests."""
    fake, responder = server
    first = evaluate(tmp_path, fake, "--rate-tests", "--filter-tests", "3")
    assert first.returncode == 0, first.stderr
    filtered = json.loads((tmp_path / "out" / "tests.filtered.json").read_text())
    rule_ids = {r["id"] for r in filtered["rules"]}
    rules_calls = responder.calls.get("RulesAnswer")
    later = evaluate(
        tmp_path, fake, "--tests", str(tmp_path / "out" / "tests.filtered.json"),
        "--models", "m1", out="later",
    )  # fmt: skip
    assert later.returncode == 0, later.stderr
    assert responder.calls.get("RulesAnswer") == rules_calls  # no new rules
    ctx = load_context(tmp_path / "later" / "context.json")
    assert {r.id for r in ctx.all_rules} == rule_ids
    for test in ctx.tests:
        if test.rule_id is not None:
            assert ctx.rule(test.rule_id) is not None
    assert "(no rule)" not in (tmp_path / "later" / "report.md").read_text()
    assert all(r.metrics["compliance"].outcome == "ok" for r in ctx.test_runs)


def test_tests_json_into_a_new_folder_keeps_its_rules_and_inverse_rules(
    server: tuple[FakeLLM, PipelineResponder], tmp_path: Path
) -> None:
    """Issue 28 item 12: tests.json carries the rules (and inverse rules) of its tests, so
    the inverse tests keep theirs in a new folder, where no inverse_rules stage runs."""
    fake, _ = server
    first = evaluate(tmp_path, fake)
    assert first.returncode == 0, first.stderr
    before = load_context(tmp_path / "out" / "context.json")
    assert any(t.inverse for t in before.tests)
    later = evaluate(
        tmp_path, fake, "--tests", str(tmp_path / "out" / "tests.json"), "--models", "m1",
        out="later",
    )  # fmt: skip
    assert later.returncode == 0, later.stderr
    ctx = load_context(tmp_path / "later" / "context.json")
    assert [t.id for t in ctx.tests] == [t.id for t in before.tests]
    for test in ctx.tests:
        if test.rule_id is not None:
            assert ctx.rule(test.rule_id) == before.rule(test.rule_id), test.rule_id
    report = (tmp_path / "later" / "report.md").read_text()
    unruled = sum(t.rule_id is None for t in before.tests)  # the prompt's sample
    assert f"| (no rule) | tests that target no known rule | 100.0% ({unruled}) |" in report
    assert ctx.inverse_rules == before.inverse_rules
    for rule in ctx.inverse_rules:
        assert f"| {rule.id} | {rule.text} | 100.0% (1) |" in report
    written = json.loads((tmp_path / "out" / "tests.json").read_text())
    assert list(written) == ["prompt", "prompt_hash", "tests", "rules"]
    assert (written["prompt"], written["prompt_hash"]) == (before.prompt.name, before.prompt_hash)
    assert written["tests"] == [t.model_dump(mode="json") for t in before.tests]
    targeted = {t.rule_id for t in before.tests if t.rule_id}
    negated = {r.inverse_of for r in before.inverse_rules if r.id in targeted}
    assert [r["id"] for r in written["rules"]] == [
        r.id for r in before.all_rules if r.id in targeted | negated
    ]


def test_judging_has_its_progress_line_and_a_full_bar(
    server: tuple[FakeLLM, PipelineResponder], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Judging streams with the runs, so the metrics stage's own turn finds nothing left:
    it is still said like any stage that made calls, and its bar ends full."""
    fake, _ = server
    base = ["--effort", "min", "--api-base", fake.url, "--out", str(tmp_path / "out")]
    result = promptgen(tmp_path, SAMPLE, *base, "--models", "m1", "--max-tests-to-run", "2")
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    assert "promptgen: runs: done, 2 calls, 220 tokens" in [ln.rsplit(",", 1)[0] for ln in lines]
    assert "promptgen: metrics: done, 4 calls, 1,000 tokens" in lines  # 2 runs × 2 metrics

    monkeypatch.setenv("PROMPTGEN_CACHE_DIR", str(tmp_path / "cache2"))
    options = Options(
        effort="min",
        models=Models(api_base=fake.url, models=["m1"]),
        evaluation=Evaluation(max_tests_to_run=2),
        run=Run(out=tmp_path / "rich"),
    )

    class Overestimated(RichReporter):  # the plan is "about": here 6 verdicts more
        def start(self, planned: dict[str, int]) -> None:
            super().start({**planned, "metrics": planned["metrics"] + 6})

    reporter = Overestimated()
    run_prompt(prepare(Path(SAMPLE).resolve(), options), reporter=reporter, save=False)
    bars = {t.description: (t.completed, t.total) for t in reporter.progress.tasks}
    assert bars["metrics"] == (4, 4)  # full, not 4 of 10
    assert bars["runs"] == (2, 2)
