"""Test cases as the model writes them: a schema built from the prompt's own inputs."""

from __future__ import annotations

import functools
import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model, model_validator

from promptgen.kinds import JSON_TEXT
from promptgen.model import PromptInput, PromptUnderTest
from promptgen.prompting.bounded import Text
from promptgen.prompting.per_item import answers, keyed_answers, keyed_model, numbered_model
from promptgen.results import Test


class _Open(BaseModel):
    model_config = ConfigDict(populate_by_name=True)


class _Nested(_Open):
    """A nested object of a test input (shaped like its sample): taken as an object, or
    as JSON text holding one, which a provider allowing fewer levels of nesting is asked
    for instead (the schema marks it, JSON_TEXT; llm/shaping.py)."""

    model_config = ConfigDict(populate_by_name=True, json_schema_extra={JSON_TEXT: True})

    @model_validator(mode="before")
    @classmethod
    def _from_text(cls, value: Any) -> Any:
        if isinstance(value, str):
            try:
                return json.loads(value)
            except ValueError:
                return value  # not JSON: refused as an object would be
        return value


# An input's value as the model writes it: bounded, clipped when longer (see bounded.py).
INPUT_CHARS = 4000
# Nested example values deeper than this are asked for as text.
_DEPTH = 4


def input_shape(spec: PromptInput) -> str:
    """What the schema asks for an input, as a hashable key: its enum, else the shape of
    its sample (or default), else its declared type."""
    example = spec.example
    shape = {"type": spec.type.lower(), "enum": spec.enum, "example": example}
    return json.dumps(shape, sort_keys=True, ensure_ascii=False, default=str)


def _declared(kind: str) -> Any:
    scalar = {"number": float, "integer": int, "boolean": bool}
    if kind in scalar:
        return scalar[kind]
    if kind == "array":
        return list[Text(INPUT_CHARS)]  # type: ignore[misc]
    return Text(INPUT_CHARS)


def _like(value: Any, depth: int = 0) -> Any:
    """A type whose values look like `value` (a sample): same nesting, same keys."""
    if isinstance(value, bool):
        return bool
    if isinstance(value, int):
        return int
    if isinstance(value, float):
        return float
    if depth < _DEPTH and isinstance(value, list) and value:
        return list[_like(value[0], depth + 1)]  # type: ignore[misc]
    if (
        depth < _DEPTH
        and isinstance(value, dict)
        and value
        and all(isinstance(k, str) for k in value)
    ):
        fields: dict[str, Any] = {
            f"f{i}": (_like(v, depth + 1), Field(alias=k)) for i, (k, v) in enumerate(value.items())
        }
        return create_model("Item", __base__=_Nested, **fields)
    return Text(INPUT_CHARS)


def _input_type(shape: str) -> Any:
    spec = json.loads(shape)
    enum = spec["enum"]
    if enum and all(isinstance(v, str | int) and not isinstance(v, bool) for v in enum):
        return Literal[tuple(enum)]  # the model picks one of the declared values
    if spec["example"] is not None:
        return _like(spec["example"])
    return _declared(spec["type"])


def _inputs_of(shapes: tuple[tuple[str, str], ...], nullable: bool = True) -> type[BaseModel]:
    # Field names are safe identifiers; the JSON keys are the input names themselves.
    fields: dict[str, Any] = {
        f"input_{i}": (
            (_input_type(shape) | None) if nullable else _input_type(shape),
            Field(alias=name),
        )
        for i, (name, shape) in enumerate(shapes)
    }
    return create_model("Inputs", __base__=_Open, **fields)


@functools.lru_cache(maxsize=256)
def _case_model(shapes: tuple[tuple[str, str], ...]) -> type[BaseModel]:
    inputs = _inputs_of(shapes)
    return create_model(
        "TestCase",
        __base__=_Open,
        inputs=(inputs, ...),
        expected_output=(Text(3000, description="What a correct output would be."), ...),
        reasoning=(Text(400, description="One sentence."), ...),
    )


@functools.lru_cache(maxsize=256)
def _cases_model(
    shapes: tuple[tuple[str, str], ...], counts: tuple[tuple[str, int], ...], count: int
) -> type[BaseModel]:
    case = _case_model(shapes)
    if not counts:
        return numbered_model("TestCases", count, case)
    sizes = {n for _, n in counts}
    if len(sizes) == 1:  # every label the same number of cases: one shared definition
        labels = tuple(k for k, _ in counts)
        return keyed_model("TestCases", labels, numbered_model("Cases", sizes.pop(), case))
    fields: dict[str, Any] = {
        f"k{i}": (numbered_model(f"Cases{n}", n, case), Field(None, alias=label))
        for i, (label, n) in enumerate(counts)
    }
    return _labelled(fields)


def _labelled(fields: dict[str, Any]) -> type[BaseModel]:
    from promptgen.prompting.per_item import lenient_keyed

    return lenient_keyed("TestCases", fields)


def _shapes(prompt: PromptUnderTest, names: list[str]) -> tuple[tuple[str, str], ...]:
    return tuple((name, input_shape(prompt.inputs[name])) for name in names)


def case_model(prompt: PromptUnderTest, names: list[str]) -> type[BaseModel]:
    """One test case (expansion). Each input is typed like its sample, default or
    declaration."""
    return _case_model(_shapes(prompt, names))


def cases_model(
    prompt: PromptUnderTest,
    names: list[str],
    counts: dict[str, int] | None = None,
    count: int = 1,
) -> type[BaseModel]:
    """Test cases numbered "1" .. n under each rule label, n = `counts[label]`
    (generation), or `count` numbered cases in all (baseline, no labels). Every label and
    number is a required property: a server that follows the schema can neither skip nor
    mislabel one; a malformed case comes back as missing, never sinking the answer."""
    return _cases_model(_shapes(prompt, names), tuple((counts or {}).items()), count)


@functools.lru_cache(maxsize=256)
def _inputs_model(shapes: tuple[tuple[str, str], ...], count: int) -> type[BaseModel]:
    case = create_model("TestInput", __base__=_Open, inputs=(_inputs_of(shapes, False), ...))
    return numbered_model("TestInputs", count, case)


def inputs_model(prompt: PromptUnderTest, names: list[str], count: int = 1) -> type[BaseModel]:
    """`count` numbered sets of input values, nothing else (stepwise: a small model asked
    for an expected output echoed the input or described the prompt, so none is asked;
    each value is required, never null)."""
    return _inputs_model(_shapes(prompt, names), count)


def labelled_cases(parsed: BaseModel) -> list[tuple[str, int, Any]]:
    """(label, number, case) for each well-formed case of a `cases_model` answer with
    labels, in label and number order."""
    out = []
    for label, numbered in keyed_answers(parsed).items():
        cases = answers(numbered)
        out += [(label, k, cases[k]) for k in sorted(cases)]
    return out


def numbered_cases(parsed: BaseModel) -> list[Any]:
    """The well-formed cases of a `cases_model` answer without labels, in number order."""
    cases = answers(parsed)
    return [cases[k] for k in sorted(cases)]


def case_inputs(case: BaseModel) -> dict[str, Any]:
    built: Any = case  # a model built at run time (`case_model`): mypy knows none of its fields
    return built.inputs.model_dump(by_alias=True)


def complete_inputs(
    prompt: PromptUnderTest, inputs: dict[str, Any], names: list[str], repair: bool = True
) -> tuple[dict[str, Any] | None, bool]:
    """Fill a missing input from its default or sample. (None, _) when it cannot be filled
    (or, without `repair`, when one is missing: a generated test's expected output was
    written for the input it has, never for a sample put in its place); the flag says
    whether anything was repaired."""
    repaired = False
    out = {}
    for name in names:
        value = inputs.get(name)
        if value is None or (isinstance(value, str) and not value.strip()):
            if not repair:
                if name in inputs and value is not None:
                    out[name] = value  # an empty value the case itself asks for
                    continue
                return None, repaired
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
