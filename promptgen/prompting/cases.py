"""Test cases as the model writes them: a schema built from the prompt's own inputs."""

from __future__ import annotations

import functools
import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from promptgen.model import PromptUnderTest
from promptgen.results import Test


class _Open(BaseModel):
    model_config = ConfigDict(populate_by_name=True)


@functools.lru_cache(maxsize=256)
def _case_models(
    names: tuple[str, ...], labels: tuple[str, ...] | None, count: int
) -> tuple[type[BaseModel], ...]:
    # Field names are safe identifiers; the JSON keys are the input names themselves.
    fields: dict[str, Any] = {
        f"input_{i}": (str | None, Field(alias=name, max_length=4000))
        for i, name in enumerate(names)
    }
    inputs = create_model("Inputs", __base__=_Open, **fields)
    case_fields: dict[str, Any] = {
        "inputs": (inputs, ...),
        "expected_output": (
            str,
            Field(max_length=3000, description="What a correct output would be."),
        ),
        "reasoning": (str, Field(max_length=400, description="One sentence.")),
    }
    per = "rule label" if labels else "answer"
    if labels:  # the label must be one of the chunk's: an enum, which providers enforce
        label = (Literal[labels], Field(description="The label of the rule it tests."))  # type: ignore[valid-type]
        case_fields = {"rule": label, **case_fields}
    case = create_model("TestCase", __base__=_Open, **case_fields)
    tests = (list[case], Field(description=f"{count} test case(s) per {per}."))  # type: ignore[valid-type]
    many = create_model("TestCases", __base__=_Open, tests=tests)
    return case, many


def case_model(names: list[str]) -> type[BaseModel]:
    """One test case without a rule label (expansion)."""
    return _case_models(tuple(names), None, 1)[0]


def cases_model(
    names: list[str], labels: list[str] | None = None, count: int = 1
) -> type[BaseModel]:
    """A list of test cases: `count` per rule label (generation), or `count` in all
    (baseline, no labels)."""
    return _case_models(tuple(names), tuple(labels) if labels else None, count)[1]


def case_inputs(case: BaseModel) -> dict[str, Any]:
    return case.inputs.model_dump(by_alias=True)  # type: ignore[attr-defined]


def complete_inputs(
    prompt: PromptUnderTest, inputs: dict[str, Any], names: list[str]
) -> tuple[dict[str, Any] | None, bool]:
    """Fill a missing input from its default or sample. (None, _) when it cannot be filled;
    the flag says whether anything was repaired."""
    repaired = False
    out = {}
    for name in names:
        value = inputs.get(name)
        if value is None or (isinstance(value, str) and not value.strip()):
            spec = prompt.inputs[name]
            fill = spec.default if spec.default is not None else spec.sample
            if fill is None:
                return None, repaired
            value, repaired = fill, True
        out[name] = value
    return out, repaired


def shown(test: Test) -> str:
    """How a test is shown to a model."""
    data = {"inputs": test.inputs, "expected_output": test.expected_output}
    return json.dumps(data, ensure_ascii=False, indent=1)
