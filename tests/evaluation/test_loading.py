"""Metric kinds are found, not listed: every module of promptgen.evaluation with a
`metrics(prompt, options)` loader is one, loaded once per run in its LOAD_ORDER."""

from __future__ import annotations

from pathlib import Path

import pytest

from promptgen.errors import BadInputError
from promptgen.evaluation.loading import kinds, load_metrics
from promptgen.formats import load_prompt
from promptgen.options import Evaluation, Options


def test_the_kinds_and_their_order() -> None:
    names = [k.__name__.rsplit(".", 1)[-1] for k in kinds()]
    assert names == [
        "builtin", "custom", "verdict_judge", "check_metric", "lve", "promptarchitect",
        "expected_class",
    ]  # fmt: skip


def test_every_kind_in_one_list(tmp_path: Path) -> None:
    prompt = tmp_path / "p.prompty"
    prompt.write_text("---\nname: p\nchecks:\n  - contains: a\n---\nSay {{x}}.\n")
    options = Options(
        evaluation=Evaluation(groundtruth=True, custom_metrics=["OK or ERR?"], checks=["regex=b"])
    )
    loaded = load_metrics(load_prompt(prompt), options)
    assert [(m.name, m.info.kind) for m in loaded] == [
        ("compliance", "compliance"),
        ("accuracy", "accuracy"),
        ("custom-1", "custom"),
        ("contains=a", "check"),
        ("regex=b", "check"),
        ("expected_class", "check"),
    ]
    assert [m.judged for m in loaded] == [True, True, True, False, False, False]


def test_a_name_given_twice_is_refused(tmp_path: Path) -> None:
    prompt = tmp_path / "p.prompty"
    prompt.write_text("---\nname: p\n---\nSay {{x}}.\n")
    metric = "---\nname: {name}\ntags: [scorer]\n---\nsystem:\nScore {{{{output}}}}.\n"
    (tmp_path / "a.metric.prompty").write_text(metric.format(name="same"))
    (tmp_path / "b.metric.prompty").write_text(metric.format(name="same"))
    with pytest.raises(BadInputError, match="two metrics are named 'same'"):
        load_metrics(load_prompt(prompt), Options())
    (tmp_path / "b.metric.prompty").write_text(metric.format(name="accuracy"))
    with pytest.raises(BadInputError, match="like a built-in one"):
        load_metrics(load_prompt(prompt), Options())
