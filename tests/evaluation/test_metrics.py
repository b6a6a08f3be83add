"""Each metric kind through `await metric.evaluate(case)` against the fake server, and
`load_metrics` loading each kind once from the options and the files beside a prompt."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from promptgen.config import build_config
from promptgen.evaluation import GROUNDTRUTH_JUDGE, CheckMetric, Metric, Verdict, make_case
from promptgen.evaluation.judges import ComplianceJudge, ScoreJudge, TemplateJudge
from promptgen.evaluation.loading import load_metrics
from promptgen.formats import load_prompt
from promptgen.llm import LLM
from promptgen.options import Evaluation, Options
from promptgen.results import Outcome, Test
from tests.conftest import run
from tests.fakellm import FakeLLM, Reply, json_reply
from tests.pipeline_fake import PipelineResponder
from tests.stagekit import EVAL, context, make_llm, prompt, schema_names, texts


def evaluate(
    metric: Metric,
    output: str,
    llm: LLM | None = None,
    *,
    test: Test | None = None,
    groundtruth: str | None = None,
) -> Verdict:
    """One verdict on `output` for the first test of a small context (2 rules)."""
    ctx = context(rules=2, tests=1)
    case = make_case(
        ctx, test or ctx.tests[0], output, judge=EVAL if llm else None, llm=llm,
        stage="metrics", groundtruth=groundtruth,
    )  # fmt: skip
    return run(metric.evaluate(case))


def metrics(**evaluation: Any) -> list[Metric]:
    """The metrics the options load, but the class check every run has
    (test_expected_class.py)."""
    loaded = load_metrics(prompt(), Options(evaluation=Evaluation(**evaluation)))
    return [m for m in loaded if m.name != "expected_class"]


def compliance() -> Metric:
    (metric,) = metrics()
    assert isinstance(metric, ComplianceJudge)
    return metric


def accuracy() -> Metric:
    _, metric = metrics(groundtruth=True)
    assert isinstance(metric, ScoreJudge) and metric.needs_groundtruth
    return metric


def inline(text: str = "Is the label right? Answer OK or ERR.") -> Metric:
    (metric,) = metrics(compliance=False, custom_metrics=[text])
    assert isinstance(metric, TemplateJudge)
    return metric


def scorer(tmp_path: Path) -> Metric:
    path = tmp_path / "fit.metric.prompty"
    path.write_text(SCORER)
    (metric,) = metrics(compliance=False, metric_files=[str(path)])
    assert isinstance(metric, TemplateJudge) and metric.info.scorer
    return metric


SCORER = """---
name: fit
tags: [scorer]
---
system:
Score from 0 to 100 how well the output fits the input.
user:
{{input}} -> {{output}}
"""


# -- checks ------------------------------------------------------------------------------


def test_a_check_passes_and_fails_without_a_call() -> None:
    check = CheckMetric.of({"contains": "positive"})
    assert (check.name, check.info.kind, check.judged) == ("contains=positive", "check", False)
    assert evaluate(check, "label: positive") == Verdict(100.0, "ok", "found: 'positive'")
    assert evaluate(check, "label: negative") == Verdict(0.0, "err", "missing: 'positive'")


def test_a_templated_check_is_filled_from_the_test() -> None:
    check = CheckMetric.of({"contains": "{{review}}"})  # the test's input: review number 0
    assert evaluate(check, "Read review number 0.") == Verdict(
        100.0, "ok", "found: 'review number 0'"
    )
    assert evaluate(check, "Read review number 1.").outcome == "err"


def test_a_check_whose_placeholder_is_missing_is_unknown() -> None:
    check = CheckMetric.of({"equals": "{{expected}}"})
    assert evaluate(check, "positive") == Verdict(
        None, "unknown", "the check needs {{expected}}, which this test does not give"
    )
    sample = Test(id="t", inputs={"review": "Great!"}, expected_output="positive", origin="sample")
    assert evaluate(check, "positive", test=sample) == Verdict(100.0, "ok", "equal")


# -- the compliance judge ------------------------------------------------------------------


def test_compliance_ok_and_err(fake: FakeLLM, llm: LLM) -> None:
    assert evaluate(compliance(), "positive", llm) == Verdict(100.0, "ok", "follows every rule")
    bad = evaluate(compliance(), "positive VIOLATION", llm)
    assert bad == Verdict(0.0, "err", "breaks rule 1: says VIOLATION")
    assert schema_names(fake) == ["ComplianceVerdict"] * 2
    assert [(b["model"], b["temperature"]) for b in fake.requests] == [("judge-model", 0)] * 2
    text = texts(fake, "ComplianceVerdict")[0]
    assert "1. The output follows requirement 1.\n2. The output follows requirement 2." in text
    assert "review number 0" in text and "<ANSWER>" in text
    # a check under each rule's number, holding only whether it is broken: no copy of the
    # rule to write (the number names it)
    schema = fake.requests[0]["response_format"]["json_schema"]["schema"]
    assert sorted(property_names(schema)) == ["1", "2", "broken", "checks", "reason", "verdict"]


def property_names(node: Any) -> set[str]:
    """Every property name a JSON schema declares, at any depth."""
    if isinstance(node, list):
        return set().union(*map(property_names, node)) if node else set()
    if not isinstance(node, dict):
        return set()
    own = set(node.get("properties") or {})
    return own.union(*map(property_names, node.values()))


def test_a_rule_marked_broken_makes_an_ok_verdict_err(tmp_path: Path) -> None:
    answer = {
        "checks": {
            "1": {"broken": False},
            "2": {"broken": True},
        },
        "reason": "reads fine",
        "verdict": "ok",
    }
    with FakeLLM() as plain:
        plain.queue(json_reply(answer))
        verdict = evaluate(compliance(), "positive", make_llm(plain, tmp_path))
    assert verdict == Verdict(0.0, "err", "broken: The output follows requirement 2. (reads fine)")


# -- score judges --------------------------------------------------------------------------


def test_accuracy_scores_against_the_groundtruth(fake: FakeLLM, llm: LLM) -> None:
    verdict = evaluate(accuracy(), "positive", llm, groundtruth="the reference label")
    assert verdict == Verdict(75.0, "ok", "close to the reference")  # ok from 50 up
    assert schema_names(fake) == ["ScoreVerdict"]
    assert "<REFERENCE>\nthe reference label\n</REFERENCE>" in texts(fake, "ScoreVerdict")[0]


@pytest.mark.parametrize(("score", "outcome"), [(50, "ok"), (49, "err")])
def test_accuracy_passes_from_50(tmp_path: Path, score: int, outcome: Outcome) -> None:
    with FakeLLM() as plain:
        plain.queue(json_reply({"explanation": "compared", "score": score}))
        verdict = evaluate(accuracy(), "negative", make_llm(plain, tmp_path), groundtruth="x")
    assert verdict == Verdict(float(score), outcome, "compared")


def test_the_groundtruth_judge_has_its_own_schema(
    fake: FakeLLM, llm: LLM, responder: PipelineResponder
) -> None:
    responder.groundtruth_scores = [64]
    assert GROUNDTRUTH_JUDGE.scores_groundtruth and not GROUNDTRUTH_JUDGE.needs_groundtruth
    verdict = evaluate(GROUNDTRUTH_JUDGE, "positive", llm)
    assert verdict == Verdict(64.0, "ok", "groundtruth scored 64")
    assert schema_names(fake) == ["GroundtruthScore"]


# -- template judges -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("The label fits the review. OK", Verdict(100.0, "ok", "The label fits the review. OK")),
        ("OK, I looked. Wrong label: ERR", Verdict(0.0, "err", "OK, I looked. Wrong label: ERR")),
        ('{"verdict": "err", "reason": "not a label"}', Verdict(0.0, "err", "not a label")),
        ("I cannot tell.", Verdict(None, "unknown", "I cannot tell.")),
    ],
    ids=["ok", "last-word-err", "json-err", "no-verdict"],
)
def test_a_template_judge_reads_free_text(tmp_path: Path, reply: str, expected: Verdict) -> None:
    with FakeLLM() as plain:
        plain.queue(reply)
        assert evaluate(inline(), "positive", make_llm(plain, tmp_path)) == expected
        (body,) = plain.requests
    assert "response_format" not in body and body["model"] == "judge-model"
    last = body["messages"][-1]["content"]
    assert last == "Input:\nreview number 0\n\nOutput to judge:\npositive"


def test_a_template_judge_as_scorer(fake: FakeLLM, llm: LLM, tmp_path: Path) -> None:
    metric = scorer(tmp_path)
    assert evaluate(metric, "positive", llm) == Verdict(75.0, "ok", "close to the reference")
    assert schema_names(fake) == ["ScoreVerdict"]
    assert fake.requests[0]["messages"][-1]["content"] == "review number 0 -> positive"


# -- failed calls --------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["compliance", "accuracy", "groundtruth", "inline", "scorer"])
def test_a_failed_call_is_an_error_without_a_score(tmp_path: Path, kind: str) -> None:
    metric = {
        "compliance": compliance,
        "accuracy": accuracy,
        "groundtruth": lambda: GROUNDTRUTH_JUDGE,
        "inline": inline,
        "scorer": lambda: scorer(tmp_path),
    }[kind]()
    with FakeLLM(responder=lambda body: Reply(status=500)) as down:
        verdict = evaluate(metric, "positive", make_llm(down, tmp_path), groundtruth="x")
        assert len(down.requests) == 2  # one retry
    assert (verdict.score, verdict.outcome, verdict.reason) == (None, "unknown", None)
    # the server's own message, as the transport reads it from the error body
    assert (
        verdict.error
        == "openai/judge-model: Error code: 500 - fake error 500 (HTTP 500, 2 attempt(s))"
    )


# -- loading -------------------------------------------------------------------------------


def kinds(loaded: list[Metric]) -> list[tuple[str, str]]:
    return [(m.name, m.info.kind) for m in loaded]


def test_builtin_metrics_follow_the_options() -> None:
    assert kinds(metrics()) == [("compliance", "compliance")]
    assert kinds(metrics(compliance=False)) == []
    assert kinds(metrics(groundtruth=True)) == [
        ("compliance", "compliance"),
        ("accuracy", "accuracy"),
    ]
    assert kinds(metrics(checks=["icontains=thanks", "icontains=thanks"])) == [
        ("compliance", "compliance"),
        ("icontains=thanks", "check"),
    ]


def test_metrics_beside_the_prompt_and_from_options_load_once(tmp_path: Path) -> None:
    (tmp_path / "sentiment.prompty").write_text(
        "---\nname: sentiment\nchecks:\n  - contains: e\n---\nsystem:\nLabel {{review}}.\n"
    )
    (tmp_path / "other.prompty").write_text("---\nname: other\n---\nsystem:\nSay {{x}}.\n")
    (tmp_path / "sentiment.metric.prompty").write_text(SCORER.replace("name: fit", "name: tone"))
    (tmp_path / "shared.metric.prompty").write_text(
        "---\ntags: [groundtruth, scorer]\n---\nuser:\nScore {{output}} for {{review}}.\n"
    )
    (tmp_path / "other.metric.prompty").write_text(SCORER.replace("name: fit", "name: theirs"))
    loaded = load_prompt(tmp_path / "sentiment.prompty")
    options = Options(
        evaluation=Evaluation(
            metric_files=[str(tmp_path / "sentiment.metric.prompty")],  # found anyway: once
            custom_metrics=["Is the label right? Answer OK or ERR."],
            checks=["contains=e", "regex=^[a-z]+$"],
        )
    )
    found = load_metrics(loaded, options)
    assert kinds(found) == [
        ("compliance", "compliance"),
        ("tone", "custom"),
        ("shared", "custom"),
        ("custom-1", "custom"),
        ("contains=e", "check"),
        ("regex=^[a-z]+$", "check"),
        ("expected_class", "check"),
    ]
    tone, shared = found[1], found[2]
    assert tone.info.scorer and not tone.scores_groundtruth
    assert tone.info.source == str((tmp_path / "sentiment.metric.prompty").resolve())
    assert shared.scores_groundtruth and shared.info.scorer
    cfg = build_config(loaded, options)
    assert cfg.groundtruth_metrics == (shared,)
    assert [m.name for m in cfg.output_metrics] == [
        "compliance", "tone", "custom-1", "contains=e", "regex=^[a-z]+$", "expected_class"
    ]  # fmt: skip
