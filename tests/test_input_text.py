"""The input as judges read it: the fast layout of a flat object is exactly what
`json.dumps(indent=1)` writes (judge prompts, and so cached answers, stay the same)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from promptgen.formats import load_prompt
from promptgen.prompting.invoke import input_text
from promptgen.results import Test

SAMPLE = Path(__file__).resolve().parents[1] / "samples" / "classify-sentiment.prompty"


@pytest.mark.parametrize(
    "inputs",
    [
        {"a": 'quote " and \\ slash', "b": 2, "c": None, "d": 1.5, "é": True, "e": "ünï\n"},
        {"a": "x", "b": [1, {"c": 2}]},
        {"only": {"nested": True}},
        {"only": "raw text"},
        {},
    ],
)
def test_same_text_as_an_indented_dump(inputs: dict[str, object]) -> None:
    prompt = load_prompt(SAMPLE)
    values = {**inputs, **prompt.fixed_inputs}
    text = input_text(prompt, Test(id="t", inputs=inputs))
    if len(values) == 1:
        (value,) = values.values()
        assert text == (value if isinstance(value, str) else json.dumps(value))
    else:
        assert text == json.dumps(values, ensure_ascii=False, indent=1)
