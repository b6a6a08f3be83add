"""How a test becomes a call to a model under test: arguments, messages, parameters."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from typing import Any, TypedDict

from promptgen.formats.declared import response_format_problem, sendable
from promptgen.model import PromptUnderTest
from promptgen.options import Evaluation
from promptgen.results import Test

# Parameters the gateway takes by name; the rest travel as extra call parameters, as the
# prompt writes them (top_p, stop, penalties, logit_bias, tools, response_format, ...).
_NAMED = ("temperature", "max_tokens", "seed")


def test_arguments(prompt: PromptUnderTest, test: Test) -> dict[str, Any]:
    """Input defaults, overlaid by the scenario's parameters, by the test's inputs, and by
    the values the run fixes (`--var`), which no test overrides."""
    values = {n: i.default for n, i in prompt.inputs.items() if i.default is not None}
    scenario = next((s for s in prompt.scenarios if s.name == test.scenario), None)
    if scenario is not None:
        values.update(scenario.parameters)
    values.update(test.inputs)
    values.update(prompt.fixed_inputs)
    return values


def test_inputs(prompt: PromptUnderTest, test: Test) -> dict[str, Any]:
    """The test's own inputs with the run's fixed values over them: what a judge must know
    of the input (a fixed target language, say) to judge the output."""
    return {**test.inputs, **prompt.fixed_inputs}


def input_text(prompt: PromptUnderTest, test: Test) -> str:
    """The test's input as judges see it: one input raw, several as a JSON object."""
    values = test_inputs(prompt, test)
    if len(values) == 1:
        (value,) = values.values()
        return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if all(isinstance(v, _SCALARS) for v in values.values()):
        # What json.dumps(indent=1) writes for a flat object, with the C encoder per
        # value: an indented dump runs the pure-Python encoder, and every judgement of
        # every run asks for this text.
        items = ",\n".join(
            f" {json.dumps(str(k), ensure_ascii=False)}: {json.dumps(v, ensure_ascii=False)}"
            for k, v in values.items()
        )
        return "{\n" + items + "\n}" if items else "{}"
    return json.dumps(values, ensure_ascii=False, indent=1)


_SCALARS = (str, int, float, bool, type(None))


class CallArgs(TypedDict):
    """`CallSettings` as keyword arguments of `LLM.complete` and `LLM.complete_choices`
    (every key is given: None where the prompt sets nothing)."""

    output: dict[str, Any] | None
    temperature: float | None
    max_tokens: int | None
    seed: int | None
    params: dict[str, Any]


@dataclass
class CallSettings:
    temperature: float | None = None
    max_tokens: int | None = None
    seed: int | None = None
    params: dict[str, Any] = field(default_factory=dict)
    # The prompt's json_schema response format, with the name it is sent under: the
    # gateway sends it and validates the answer against its schema (llm/structured.py).
    output: dict[str, Any] | None = None

    def call(self) -> CallArgs:
        """These settings as the gateway's call arguments (`LLM.complete` and
        `LLM.complete_choices`)."""
        return {
            "output": self.output,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
            "params": self.params,
        }


def call_settings(prompt: PromptUnderTest, options: Evaluation) -> CallSettings:
    """The prompt's own model parameters, overridden by `--param` (options.model_params):
    what the model under test is sent, all but what promptgen cannot send
    (formats/declared.py, a warning each when the prompt is read)."""
    params = sendable({**prompt.model.parameters, **options.model_params})
    if "max_completion_tokens" in params and "max_tokens" not in params:
        params["max_tokens"] = params.pop("max_completion_tokens")
    fmt = params.pop("response_format", None)
    if fmt is None and not response_format_problem(prompt.model.response_format):
        fmt = prompt.model.response_format
    output = _declared_schema(fmt, prompt.name)
    if fmt is not None and output is None:  # text or json_object: sent as written
        params["response_format"] = fmt
    named = {n: params.pop(n) for n in _NAMED if params.get(n) is not None}
    return CallSettings(
        temperature=_number(named.get("temperature"), float),
        max_tokens=_number(named.get("max_tokens"), int),
        seed=_number(named.get("seed"), int),
        params=params,
        output=output,
    )


def stored(
    settings: CallSettings, prompt: PromptUnderTest, run_id: str, test: Test, index: int
) -> CallSettings:
    """The settings with `store=True` and the metadata a stored completion carries
    (OpenAI's limits: 16 keys, text values of at most 512 characters)."""
    metadata = {
        "promptgen_prompt": prompt.name,
        "promptgen_run": run_id,
        "test_id": test.id,
        "rule_id": test.rule_id or "",
        "scenario": test.scenario or "",
        "inverse": "true" if test.inverse else "false",
        "run_index": str(index),
        "split": split_label(test.id),
    }
    params = {
        **settings.params,
        "store": True,
        "metadata": {k: v[:512] for k, v in metadata.items()},
    }
    return replace(settings, params=params)


def split_label(test_id: str) -> str:
    """ "train" or "test" for a test, fixed by its id: about one test in five is "test",
    and every run of a test lands on the same side (docs/exports.md)."""
    return "test" if int(hashlib.sha256(test_id.encode()).hexdigest()[:8], 16) % 5 == 0 else "train"


def _number(value: Any, kind: type) -> Any:
    if value is None:
        return None
    try:
        return kind(value)
    except (TypeError, ValueError):
        return None


def _declared_schema(fmt: Any, prompt_name: str) -> dict[str, Any] | None:
    """A json_schema response format as the gateway sends it: the author's `strict`,
    `schema` and `description`, named after the author's name, else the schema's title,
    else the prompt (the gateway makes the name one providers accept); None for any
    other format."""
    if not isinstance(fmt, dict) or fmt.get("type") != "json_schema":
        return None
    spec = fmt["json_schema"]
    name = spec.get("name") or spec["schema"].get("title") or prompt_name
    return {"type": "json_schema", "json_schema": {**spec, "name": name}}
