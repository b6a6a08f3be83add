"""Promptarchitect tests as metrics: every test type on a passing and a failing output.
The deterministic ones directly; the judged ones (question, score, faithfulness) against
the fake server, whose responder answers their schemas."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from promptgen.evaluation.loading import load_metrics
from promptgen.evaluation.pa_checks import count, format_check
from promptgen.evaluation.promptarchitect import make_metric
from promptgen.evaluation.protocol import Case, Verdict
from promptgen.formats import load_prompt
from promptgen.llm import LLM
from promptgen.options import Evaluation, Options
from promptgen.results import Test
from tests.conftest import run
from tests.fakellm import FakeLLM
from tests.pipeline_fake import PipelineResponder
from tests.stagekit import EVAL, make_llm, prompt, schema_names

TEST = Test(id="test-1", inputs={"input": "How do I reset my password?"})


def prop(unit: str, low: int | None = None, high: int | None = None, equals: int | None = None):  # type: ignore[no-untyped-def]
    return {"type": "property", "unit": unit, "min": low, "max": high, "equals": equals}


def check(spec: dict[str, Any], output: str) -> Verdict:
    metric = make_metric("t", spec)
    assert metric.judged is False
    return run(metric.evaluate(Case(test=TEST, output=output)))


CHECKS = [
    # (spec, passing output, its reason, failing output, its reason)
    (prop("words", 2, 4), "three short words", "3 words, expected 2 to 4",
     "one", "1 words, expected 2 to 4"),
    (prop("sentences", equals=2), "One... Two!", "2 sentences, expected exactly 2",
     "One. Two. Three?", "3 sentences, expected exactly 2"),
    (prop("lines", high=2), "a\n\n\nb\n", "2 lines, expected at most 2",
     "a\nb\nc", "3 lines, expected at most 2"),
    # Paragraphs split on "\n\n" only: a line of spaces does not separate two.
    (prop("paragraphs", low=2), "a\n\nb", "2 paragraphs, expected at least 2",
     "a\n  \nb", "1 paragraphs, expected at least 2"),
    (prop("characters", equals=5), "ab de", "5 characters, expected exactly 5",
     "ab de\n", "6 characters, expected exactly 5"),
    ({"type": "format", "format": "json"}, ' {"ok": true}\n', "valid JSON",
     "{nope", "not JSON: Expecting property name enclosed in double quotes at line 1"),
    ({"type": "format", "format": "html"}, "\n  <p>Hello <b>you</b></p>", "an HTML document",
     "Hello <b>you</b>", "does not start with '<'"),
    ({"type": "format", "format": "html"}, "<br/>", "an HTML document",
     "<!-- only a comment -->", "holds no HTML element"),
    ({"type": "format", "format": "markdown"}, "# Title\n\nSome **bold** text.",
     "Markdown: heading, emphasis", "Just a sentence.",
     "no Markdown construct (heading, list, emphasis, code, link, table, blockquote, rule)"),
    ({"type": "format", "format": "markdown"}, "| a | b |\n|---|---|\n| 1 | 2 |",
     "Markdown: table", '{"title": "x"}', "the output is JSON"),
    ({"type": "format", "format": "text"}, "Thanks, the refund is on its way. 5 * 3 = 15.",
     "plain text", "- a list item", "the output has Markdown (list)"),
    ({"type": "format", "format": "text"}, "snake_case_name costs 2*3 euros",
     "plain text", "<div>hi</div>", "the output is an HTML document"),
    ({"type": "language", "lang_code": "fr"},
     "Bonjour, je voudrais réserver une table pour deux personnes ce soir.",
     "detected fr, expected fr",
     "Hello, I would like to book a table for two people tonight.",
     "detected en, expected fr"),
    ({"type": "keyword", "keyword": "Support Team"}, "Regards, the Support Team",
     "found: 'Support Team'", "Regards, the support team", "missing: 'Support Team'"),
]  # fmt: skip


@pytest.mark.parametrize(("spec", "good", "why", "bad", "why_not"), CHECKS,
                         ids=lambda v: str(v)[:30])  # fmt: skip
def test_deterministic_tests_pass_and_fail(
    spec: dict[str, Any], good: str, why: str, bad: str, why_not: str
) -> None:
    assert check(spec, good) == Verdict(score=100.0, outcome="ok", reason=why)
    assert check(spec, bad) == Verdict(score=0.0, outcome="err", reason=why_not)


def test_counting_is_promptarchitects() -> None:
    text = "First line. Second?\r\n\r\nThird!\n\n\n  \nlast"
    assert count("words", text) == 5
    assert count("sentences", text) == 4  # pieces between . ! ?, blank ones dropped
    assert count("lines", text) == 3  # split on "\n"; lines of only "\r" or spaces dropped
    assert count("paragraphs", text) == 2  # "\r\n\r\n" and "\n  \n" do not split
    assert count("characters", text) == len(text)


def test_language_passes_when_the_code_is_part_of_the_detected_one() -> None:
    chinese = "今天天气很好，我们一起去公园散步吧。这里有很多人在锻炼身体。"
    verdict = check({"type": "language", "lang_code": "zh"}, chinese)
    assert (verdict.outcome, verdict.reason) == ("ok", "detected zh-cn, expected zh")
    assert check({"type": "language", "lang_code": "en"}, "1234 5678").reason == (
        "no language could be detected"
    )


def test_markdown_and_text_are_validated_not_assumed() -> None:
    # Promptarchitect passes any output as Markdown; promptgen asks for a construct.
    assert format_check("markdown", "See [the docs](https://example.com).").reason == (
        "Markdown: link"
    )
    assert not format_check("markdown", "   ").passed
    assert format_check("text", "").reason == "the output is empty"
    assert format_check("text", "42").passed  # a bare JSON number reads as text


# -- judged tests, against the fake server ---------------------------------------------------


class Answers(PipelineResponder):
    """The pipeline's answers, with a fixed score or fixed claims when given."""

    def __init__(self, score: float | None = None, claims: list[bool] | None = None) -> None:
        super().__init__()
        self.score, self.claims = score, claims

    def answer(self, name: str, schema: dict[str, Any], text: str, n: int) -> Any:
        if name == "PaScoreAnswer" and self.score is not None:
            return {"explanation": "as asked", "score": self.score}
        if name == "FaithfulnessAnswer" and self.claims is not None:
            return {"claims": [{"claim": f"claim {i}", "supported": s}
                               for i, s in enumerate(self.claims, start=1)]}  # fmt: skip
        return super().answer(name, schema, text, n)


def judged(
    spec: dict[str, Any],
    output: str,
    tmp_path: Path,
    responder: PipelineResponder | None = None,
    arguments: dict[str, Any] | None = None,
) -> tuple[Verdict, FakeLLM]:
    metric = make_metric("t", spec)
    assert metric.judged is True
    with FakeLLM(responder=responder or PipelineResponder()) as fake:
        llm: LLM = make_llm(fake, tmp_path)
        case = Case(
            test=TEST,
            output=output,
            values={"input": "How do I reset my password?"},
            arguments=arguments or dict(TEST.inputs),
            judge=EVAL,
            llm=llm,
        )
        return run(metric.evaluate(case)), fake


QUESTION = {"type": "question", "prompt": "Does the reply explain how to reset it?"}


def test_question_passes_on_yes_and_fails_on_no(tmp_path: Path) -> None:
    verdict, fake = judged(QUESTION, "Use the reset link.", tmp_path)
    assert verdict == Verdict(score=100.0, outcome="ok", reason="yes: it does")
    (body,) = fake.requests
    assert (body["model"], body["temperature"]) == ("judge-model", 0)
    assert schema_names(fake) == ["PaQuestionAnswer"]
    schema = body["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["answer"]["enum"] == ["yes", "no"]
    user = body["messages"][-1]["content"]
    assert "<QUESTION>\nDoes the reply explain how to reset it?\n</QUESTION>" in user
    assert "<INPUT>\nHow do I reset my password?\n</INPUT>" in user
    assert "<ANSWER>\nUse the reset link.\n</ANSWER>" in user
    verdict, _ = judged(QUESTION, "VIOLATION", tmp_path)
    assert verdict == Verdict(score=0.0, outcome="err", reason="no: says VIOLATION")


SCORE = {"type": "score", "prompt": "How friendly is it?", "min": 1, "max": 5, "threshold": 4}


@pytest.mark.parametrize(
    ("answer", "expected"),
    [(5, (100.0, "ok")), (4, (75.0, "ok")), (3, (50.0, "err")), (1, (0.0, "err"))],
)
def test_score_passes_at_the_threshold_not_at_the_midpoint(
    answer: int, expected: tuple[float, str], tmp_path: Path
) -> None:
    verdict, fake = judged(SCORE, "Happy to help!", tmp_path, Answers(score=answer))
    assert (verdict.score, verdict.outcome) == expected
    assert verdict.reason == f"scored {answer} of 1-5, passes at 4; as asked"
    schema = fake.requests[0]["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["score"] == {"maximum": 5, "minimum": 1, "type": "integer"}
    assert "from 1 (worst) to 5" in fake.requests[0]["messages"][0]["content"]
    # a threshold off the midpoint: every judge's verdict must pass, not an average of 50
    assert make_metric("t", SCORE).info.scorer is False
    assert make_metric("t", {**SCORE, "threshold": 3}).info.scorer is True


def test_a_score_on_a_fractional_scale(tmp_path: Path) -> None:
    spec = {**SCORE, "min": 0, "max": 2.5, "threshold": 2}
    verdict, fake = judged(spec, "Fine.", tmp_path, Answers(score=1.5))
    assert (verdict.score, verdict.outcome) == (60.0, "err")
    schema = fake.requests[0]["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["score"]["type"] == "number"


FAITHFUL = {
    "type": "metric",
    "metric": "faithfulness",
    "input": {"question": "input", "answer": "output", "context": "article"},
    "limit": {"min": 0.8, "max": None},
}
ARTICLE = {"input": "How do I reset my password?", "article": "Reset links last 30 minutes."}


def test_faithfulness_is_the_share_of_supported_claims(tmp_path: Path) -> None:
    verdict, fake = judged(FAITHFUL, "Links last 30 minutes.", tmp_path, arguments=ARTICLE)
    assert verdict == Verdict(
        score=100.0, outcome="ok", reason="2 of 2 claims supported: 1.00 (limit at least 0.8)"
    )
    assert schema_names(fake) == ["FaithfulnessAnswer"]
    user = fake.requests[0]["messages"][-1]["content"]
    assert "<QUESTION>\nHow do I reset my password?\n</QUESTION>" in user
    assert "<CONTEXT>\nReset links last 30 minutes.\n</CONTEXT>" in user
    assert "<ANSWER>\nLinks last 30 minutes.\n</ANSWER>" in user
    verdict, _ = judged(FAITHFUL, "VIOLATION", tmp_path, arguments=ARTICLE)
    assert verdict == Verdict(
        score=50.0,
        outcome="err",
        reason="1 of 2 claims supported: 0.50 (limit at least 0.8); not supported: "
        "the second claim",
    )


def test_faithfulness_limits_no_claims_and_missing_fields(tmp_path: Path) -> None:
    capped = {**FAITHFUL, "limit": {"min": 0.2, "max": 0.6}}
    verdict, _ = judged(capped, "x", tmp_path, Answers(claims=[True, True, False]), ARTICLE)
    assert (verdict.score, verdict.outcome) == (66.67, "err")  # 2/3 is above the max 0.6
    assert verdict.reason.startswith("2 of 3 claims supported: 0.67 (limit 0.2 to 0.6)")
    verdict, _ = judged(FAITHFUL, "Hello!", tmp_path, Answers(claims=[]), ARTICLE)
    assert verdict == Verdict(
        score=100.0,
        outcome="ok",
        reason="the answer makes no claim to check: 1 (limit at least 0.8)",
    )
    verdict, fake = judged(FAITHFUL, "x", tmp_path)  # no `article` in this test
    assert verdict == Verdict(
        outcome="unknown", reason="the test gives no 'article' (read as input.context)"
    )
    assert fake.requests == []


def test_a_failed_judgement_is_an_error_not_a_verdict(tmp_path: Path) -> None:
    responder = PipelineResponder(fail_stage="PaQuestionAnswer")
    verdict, _ = judged(QUESTION, "x", tmp_path, responder)
    assert verdict.outcome == "unknown" and verdict.error


# -- loading ---------------------------------------------------------------------------------


def test_every_test_of_the_file_is_a_metric(tmp_path: Path) -> None:
    path = tmp_path / "p.prompt"
    path.write_text(
        "---\nprovider: openai\nmodel: m\ntests:\n"
        "  q: {type: question, prompt: Is it short?}\n"
        "  s: {type: score, prompt: Rate, min: 0, max: 10, threshold: 5}\n"
        "  f: {type: metric, metric: faithfulness, input: {answer: output, context: doc},"
        " limit: {min: 0.5}}\n"
        "  w: {type: property, unit: words, limit: {max: 9}}\n"
        "  j: {type: format, format: json}\n"
        "  l: {type: language, lang_code: en}\n"
        "  k: {type: keyword, keyword: OK}\n"
        "---\nAnswer {{input}}\n"
    )
    loaded = load_metrics(load_prompt(path), Options(evaluation=Evaluation(compliance=False)))
    shown = [(m.name, m.info.kind, m.judged, m.info.scorer, m.reads_analysis) for m in loaded]
    assert shown == [
        ("pa:q", "check", True, False, False),
        ("pa:s", "check", True, True, False),
        ("pa:f", "check", True, False, False),
        ("pa:w", "check", False, False, False),
        ("pa:j", "check", False, False, False),
        ("pa:l", "check", False, False, False),
        ("pa:k", "check", False, False, False),
    ]
    assert [m.info.description for m in loaded] == [
        "Promptarchitect question (yes passes): Is it short?",
        "Promptarchitect score from 0 to 10, passing at 5: Rate",
        "Promptarchitect faithfulness (answer=output, context=doc): at least 0.5",
        "Promptarchitect property: at most 9 words",
        "Promptarchitect format: json",
        "Promptarchitect language: en",
        "Promptarchitect keyword (case-sensitive): OK",
    ]
    # Any other prompt has none.
    assert load_metrics(prompt(), Options(evaluation=Evaluation(compliance=False))) == []
