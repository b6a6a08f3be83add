"""The LVE export: a test.json LVE's own rules accept, placeholders in LVE's str.format,
a checker composed of the run's checks that agrees with them, one instances file per
model (a skeleton where a test was not run), and a round trip of an LVE test."""

from __future__ import annotations

import json
from pathlib import Path

from promptgen.context import Context
from promptgen.evaluation import make_case
from promptgen.evaluation.check_metric import CheckMetric
from promptgen.evaluation.lve_checkers import Observation, check
from promptgen.export import write_exports
from promptgen.formats import load_prompt
from promptgen.formats.lve import read_test
from promptgen.formats.lve_files import read_instances
from promptgen.model import Message, PromptUnderTest
from promptgen.results import MetricInfo, MetricResult, TestRun
from tests.conftest import run
from tests.stagekit import context

CHECKS = [
    {"contains": "label"},
    {"not-icontains": "SORRY"},
    {"regex": {"pattern": "^[a-z]+ label: \\w+$", "flags": "i"}},
    {"word-count": {"min": 2, "max": 6}},
    {"is-json": {}},  # no exact LVE lambda: left out, and said
]
OUTPUTS = ["positive label: good", "Sorry, no label", "label", "Neutral label: {x}"]


def sentiment_run() -> Context:
    ctx = context(rules=1, tests=4)
    ctx.prompt.messages = [
        Message(role="system", content="Label {braces} literally."),
        Message(role="user", content="Review: {{review}}"),
    ]
    ctx.prompt.checks = CHECKS
    ctx.prompt.tags = ["severity:low", "other"]
    metrics = [CheckMetric.of(spec) for spec in CHECKS[:4]]
    ctx.metrics = [MetricInfo(name="compliance", kind="compliance"), *(m.info for m in metrics)]
    for test, output in zip(ctx.tests[:3], OUTPUTS, strict=False):
        record = TestRun(test_id=test.id, model="openai/m1", output=output)
        ctx.test_runs.append(record)
        for metric in metrics:
            case = make_case(ctx, test, output, judge=None, llm=None, stage="metrics")
            verdict = run(metric.evaluate(case))
            result = MetricResult(
                test_id=test.id, model="openai/m1", metric=metric.name, outcome=verdict.outcome
            )
            ctx.record_verdicts([result])
    return ctx


def test_a_prompt_with_checks_exports_a_checker_that_agrees_with_them(tmp_path: Path) -> None:
    ctx = sentiment_run()
    (result,) = write_exports(ctx, ["lve"], tmp_path)
    folder = tmp_path / "lve" / "openai--m1"
    assert [p.relative_to(tmp_path / "lve").as_posix() for p in result.paths] == [
        "openai--m1/test.json",
        "openai--m1/instances/promptgen.jsonl",
    ]
    assert result.skipped == ["check is-json={}: no exact LVE lambda for it"]
    body = json.loads((folder / "test.json").read_text())
    assert body["prompt"] == [
        {"role": "system", "content": "Label {{braces}} literally."},
        {"role": "user", "content": "Review: {review}"},
    ]
    assert (body["prompt_parameters"], body["tags"]) == (["review"], [
        {"name": "severity", "value": "low"}])  # fmt: skip
    test = read_test(folder / "test.json", (folder / "test.json").read_text())
    assert test.checker_name == "LambdaChecker"
    lines = [
        json.loads(x) for x in (folder / "instances" / "promptgen.jsonl").read_text().splitlines()
    ]
    assert [x["response"] for x in lines] == [*OUTPUTS[:3], None]
    for line, output in zip(lines, OUTPUTS, strict=False):
        outcome = check(test.checker_args, line["args"], test.prompt_parameters,
                        Observation(response=output, variables={"response": output}))  # fmt: skip
        expected = all(r.outcome == "ok" for r in ctx.metric_results
                       if r.test_id == line["run_info"]["test_id"])  # fmt: skip
        if line["response"] is not None:
            assert outcome.safe is expected is line["passed"], output
    assert lines[0]["passed"] is True and lines[1]["passed"] is False
    assert (lines[3]["passed"], lines[3]["run_info"]["status"]) == (None, "not run")
    # a skeleton line is not a recorded verdict: replay leaves it aside
    assert [i.passed for i in read_instances(folder)] == [True, False, False, None]


def test_no_mappable_check_leaves_the_checker_to_fill_in(tmp_path: Path) -> None:
    ctx = context(rules=1, tests=1)
    (result,) = write_exports(ctx, ["lve"], tmp_path)
    body = json.loads((tmp_path / "lve" / "promptgen--model" / "test.json").read_text())
    assert body["checker_args"] == {"checker_name": "<please fill in>"}
    assert "left as <please fill in>" in result.skipped[-1]


def test_an_lve_test_round_trips(tmp_path: Path) -> None:
    folder = tmp_path / "repository" / "trust" / "steps" / "openai--gpt-4"
    folder.mkdir(parents=True)
    prompt_lines = [
        {"content": "Estimate {thing} in {{curly}} units.", "role": "system"},
        {"content": "In {year1}?", "role": "user"},
        {"role": "assistant", "variable": "answer1"},
        {"content": "In {year2}?", "role": "user"},
        {"role": "assistant", "variable": "answer2"},
    ]
    (folder / "test.prompt").write_text("\n".join(json.dumps(m) for m in prompt_lines))
    original = {
        "description": "Estimates should fall with the year.",
        "model": "openai/gpt-4",
        "checker_args": {"checker_name": "MonotonicityChecker", "order": "desc"},
        "prompt_file": "test.prompt",
        "prompt_parameters": ["thing", "year1", "year2"],
        "default_model_args": {"temperature": 0.2},
        "author": "someone",
    }
    (folder / "test.json").write_text(json.dumps(original))
    ctx = Context.new(load_prompt(folder / "test.json"))
    write_exports(ctx, ["lve"], tmp_path / "out")
    path = tmp_path / "out" / "lve" / "openai--gpt-4" / "test.json"
    back = load_prompt(path)

    def unlined(prompt: PromptUnderTest) -> list[Message]:
        return [m.model_copy(update={"line": None}) for m in prompt.messages]

    assert unlined(back) == unlined(ctx.prompt)
    body = json.loads(path.read_text())
    assert body["checker_args"] == original["checker_args"]
    assert body["default_model_args"] == {"temperature": 0.2}
    assert body["author"] == "someone"
    assert [(m["role"], m.get("variable")) for m in body["prompt"]][2] == ("assistant", "answer1")
