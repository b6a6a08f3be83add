"""The class check: a test written for an output class passes only when the output gives
that class; tests without one are never asked it, and reports show it only where asked."""

from __future__ import annotations

import pytest

from promptgen.evaluation.expected_class import ExpectedClass, gives_class
from promptgen.evaluation.loading import load_metrics
from promptgen.evaluation.protocol import Verdict
from promptgen.evaluation.scoring import needed
from promptgen.options import Options
from promptgen.report.stats import metric_names
from promptgen.results import Test, TestRun
from tests.evaluation.test_metrics import evaluate
from tests.stagekit import context, prompt


def check() -> ExpectedClass:
    (metric,) = [m for m in load_metrics(prompt(), Options()) if m.name == "expected_class"]
    assert isinstance(metric, ExpectedClass)
    assert (metric.info.kind, metric.judged, metric.needs_class) == ("check", False, True)
    return metric


@pytest.mark.parametrize(
    ("output", "label"),
    [
        ("mixed", "mixed"),
        ("Mixed.", "mixed"),
        ("**negative**", "negative"),
        ('"positive"\n', "positive"),
        ("Sentiment: neutral", "neutral"),
        ("feat(parser): accept empty lines", "feat"),
        ("CANNOT_ANSWER: the schema has no prices", "CANNOT_ANSWER"),
        ("[]", "[]"),
        ("[ ]", "[]"),
        ('{"score": 1, "problems": ["too vague"]}', "1"),
        ("1 - unusable", "1"),
    ],
)
def test_outputs_that_give_their_class(output: str, label: str) -> None:
    assert gives_class(output, label) == (True, "")


@pytest.mark.parametrize(
    ("output", "label", "gave"),
    [
        ("positive", "mixed", "positive"),
        ("positively mixed", "positive", "positively mixed"),  # not the word alone
        ("fix: handle empty lines", "feat", "fix: handle empty lines"),
        ("feature: add x", "feat", "feature: add x"),
        ("10", "1", "10"),
        ('{"score": 2, "problems": []}', "1", '{"score": 2, "problems": []}'),
        ('[{"name": "Ann"}]', "[]", '[{"name": "Ann"}]'),
        ("SELECT * FROM orders", "CANNOT_ANSWER", "SELECT * FROM orders"),
        ("", "negative", ""),
    ],
)
def test_outputs_that_do_not(output: str, label: str, gave: str) -> None:
    assert gives_class(output, label) == (False, gave)


def test_the_verdicts_a_reader_sees() -> None:
    mixed = Test(id="t", inputs={"review": "Loved it, but it broke."}, expected_class="mixed")
    assert evaluate(check(), "Mixed", test=mixed) == Verdict(100.0, "ok", "gives 'mixed'")
    assert evaluate(check(), "positive", test=mixed) == Verdict(
        0.0, "err", "expected 'mixed'; the output starts 'positive'"
    )
    assert evaluate(check(), "  ", test=mixed) == Verdict(
        0.0, "err", "expected 'mixed'; the output is empty"
    )


def test_only_a_test_with_an_expected_class_is_asked() -> None:
    metric = check()
    run = TestRun(test_id="t", model="m", output="positive")
    plain = Test(id="t", inputs={"review": "ok"})
    classed = Test(id="t", inputs={"review": "ok"}, expected_class="mixed")
    assert needed(run, plain, [metric], ["judge"]) == []
    (item,) = needed(run, classed, [metric], ["judge"])
    assert (item.judge, item.calls) == (None, 0)  # a check: no judge, no call


def test_reports_show_the_check_only_where_a_test_expected_a_class() -> None:
    ctx = context(rules=1, tests=1)
    ctx.use_metrics([check().info])
    ctx.test_runs = [TestRun(test_id=ctx.tests[0].id, model="m", output="positive")]
    assert metric_names(ctx) == []
