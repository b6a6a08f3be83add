"""Normalisation shared by every loader: model config, inputs, samples, finishing touches."""

from __future__ import annotations

from typing import Any

from promptgen.errors import PromptFormatError
from promptgen.formats.validate import type_error
from promptgen.model import Message, ModelConfig, PromptInput, PromptUnderTest, TestSample
from promptgen.rendering.render import template_variables
from promptgen.yamlpos import Path_, line_of

# Prompty v2 option names -> the OpenAI parameter names the gateway uses.
_V2_OPTIONS = {
    "maxOutputTokens": "max_tokens",
    "maxTokens": "max_tokens",
    "topP": "top_p",
    "topK": "top_k",
    "frequencyPenalty": "frequency_penalty",
    "presencePenalty": "presence_penalty",
    "stopSequences": "stop",
    "logitBias": "logit_bias",
    "responseFormat": "response_format",
}
_PROVIDERS = {"azure_openai": "azure", "azure_serverless": "azure_ai", "openai": "openai"}
EXPECTED_KEYS = ("expected", "expected_output", "expectedOutput", "output", "groundtruth")
AUTO_INPUT = "input"


def strip_suffix(name: str, suffixes: tuple[str, ...]) -> str:
    """`name` without the first of `suffixes` it ends with (case-insensitive)."""
    for suffix in suffixes:
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return name


def normalize_options(options: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in options.items():
        if key == "additionalProperties" and isinstance(value, dict):
            out.update(value)
        else:
            out[_V2_OPTIONS.get(key, key)] = value
    return out


def model_config(section: Any) -> ModelConfig:
    """Prompty v1 (api/configuration/parameters), v2 (id/provider/...), or a bare id."""
    if section is None:
        return ModelConfig()
    if isinstance(section, str):
        return ModelConfig(id=section)
    data = section.model_dump(exclude_none=True)
    configuration = data.pop("configuration", None)
    connection = data.pop("connection", None)
    conn: dict[str, Any] = {}
    provider = data.pop("provider", None)
    model_id = data.pop("id", None)
    for block in (configuration, connection):
        if isinstance(block, dict):
            conn.update(block)
        elif isinstance(block, str):
            conn["reference"] = block
    kind = conn.get("type")
    if isinstance(kind, str):
        provider = provider or _PROVIDERS.get(kind, kind)
    model_id = model_id or conn.get("azure_deployment") or conn.get("name") or data.get("name")
    params: dict[str, Any] = {}
    for block in (data.pop("parameters", None), data.pop("options", None)):
        if isinstance(block, dict):
            params.update(normalize_options(block))
    return ModelConfig(
        id=model_id,
        provider=provider,
        api=data.pop("apiType", None) or data.pop("api", None),
        connection=conn,
        parameters=params,
        response_format=params.get("response_format"),
    )


def input_from_property(name: str, prop: Any) -> PromptInput:
    if not isinstance(prop, dict):
        # PromptPex shorthand `name: "value"` / Prompty v2 scalar shorthand.
        kind = {bool: "boolean", int: "integer", float: "number", list: "array"}.get(
            type(prop), "string"
        )
        return PromptInput(name=name, type=kind, default=prop, sample=prop)
    return PromptInput(
        name=name,
        type=prop.get("type") or prop.get("kind") or "string",
        description=prop.get("description"),
        default=prop.get("default"),
        sample=prop.get("sample", prop.get("example")),
        enum=prop.get("enum") or prop.get("enumValues"),
        required=bool(prop.get("required", False)),
    )


def split_sample(data: dict[str, Any], source: str | None = None) -> TestSample:
    inputs = dict(data)
    expected = None
    for key in EXPECTED_KEYS:
        if key in inputs:
            expected = inputs.pop(key)
            break
    return TestSample(inputs=inputs, expected=expected, source=source)


# How each template engine writes a placeholder of the input promptgen adds.
_PLACEHOLDERS = {"format": "{%s}", "verdict": "{source.%s}"}


def detect_inputs(prompt: PromptUnderTest, auto_input: bool = True) -> None:
    """Add undeclared template variables as string inputs; give an input-less prompt one.

    Rule: every name a message template reads that the frontmatter does not declare
    becomes a string input (`detected`). If the prompt then has no inputs at all, an
    input named `input` is added and appended as a final user message (to every prompt
    of a multi-run prompt), so generated tests have somewhere to go; unless `auto_input`
    is False (an LVE run as its author wrote it).
    """
    engine = prompt.template_engine
    lists = [prompt.messages, *(v.messages for v in prompt.variants)]
    for message in (m for messages in lists for m in messages):
        for name in template_variables(message.content, engine):
            if name not in prompt.inputs:
                prompt.inputs[name] = PromptInput(name=name, detected=True)
    if prompt.inputs or not auto_input:
        return
    prompt.inputs[AUTO_INPUT] = PromptInput(
        name=AUTO_INPUT, detected=True, description="The text the prompt works on."
    )
    placeholder = _PLACEHOLDERS.get(engine, "{{%s}}") % AUTO_INPUT
    for messages in lists:
        messages.append(Message(role="user", content=placeholder))


# Call parameters whose type the providers insist on (after normalize_options).
_NUMBER_PARAMS = ("temperature", "top_p", "frequency_penalty", "presence_penalty")
_WHOLE_PARAMS = ("max_tokens", "max_completion_tokens", "seed", "n", "top_k")


def parameter_problem(name: str, value: Any) -> str | None:
    """What is wrong with a model call parameter's type (None: fine, or not checked).

    Numbers may be written as text (`${env:TEMPERATURE}` gives text); a date, a list or
    true/false is refused, as is a whole number past Python's int-to-text limit."""
    kinds: tuple[type, ...]
    if name in _NUMBER_PARAMS:
        expected, kinds = "a number", (int, float)
    elif name in _WHOLE_PARAMS:
        expected, kinds = "a whole number", (int,)
    elif name == "stop":
        if isinstance(value, str) or (
            isinstance(value, list) and all(isinstance(v, str) for v in value)
        ):
            return None
        return "a string or a list of strings"
    else:
        return None
    if value is None:
        return None
    if isinstance(value, kinds) and not isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            float(value) if float in kinds else int(value)
            return None
        except ValueError:
            pass
    return expected


def check_parameters(
    params: Any, where: Path_, *, file: str, lines: dict[Path_, int], what: str
) -> None:
    """Refuse a model call parameter of the wrong type (`temperature: 2024-01-01`), with
    its line, before it reaches a provider."""
    if not isinstance(params, dict):
        return
    for key, value in params.items():
        if key == "additionalProperties":
            check_parameters(value, (*where, key), file=file, lines=lines, what=what)
            continue
        problem = parameter_problem(_V2_OPTIONS.get(key) or key, value)
        if problem:
            path = (*where, key)
            raise type_error(
                ".".join(str(p) for p in path),
                problem,
                value,
                file=file,
                line=line_of(lines, path),
                what=what,
            )


def parameter_line(lines: dict[Path_, int], blocks: tuple[Path_, ...], name: str) -> int | None:
    """The line a call parameter (`name` in OpenAI spelling) is written on under one of
    `blocks` (camelCase spellings and `additionalProperties` included), else the line of
    the first block there is."""
    spellings = [name, *(k for k, v in _V2_OPTIONS.items() if v == name)]
    for block in blocks:
        for key in spellings:
            for path in ((*block, key), (*block, "additionalProperties", key)):
                if path in lines:
                    return lines[path]
    return next((lines[b] for b in blocks if b in lines), None)


def check_count(
    items: Any, limit: int, where: Path_, *, file: str, lines: dict[Path_, int], what: str
) -> None:
    """Refuse a list longer than its limit in promptgen.bounds (before any work on it)."""
    if isinstance(items, list) and len(items) > limit:
        raise PromptFormatError(
            f"'{'.'.join(str(p) for p in where)}' lists {len(items):,} {what}; "
            f"promptgen takes at most {limit:,}",
            file=file,
            line=line_of(lines, where),
            hint="keep the most useful ones, or split the prompt",
        )
