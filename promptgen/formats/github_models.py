"""Loader for GitHub Models prompt files (`.prompt.yml` / `.prompt.yaml`).

Templates use `{{name}}` substitution; promptgen renders them with its Mustache engine,
which is a superset (a `{{ name }}` with spaces also resolves).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from promptgen.bounds import MAX_MESSAGES, MAX_TEST_SAMPLES, printable
from promptgen.errors import PromptFormatError, RenderError
from promptgen.formats import declared
from promptgen.formats.common import (
    check_count,
    check_parameters,
    detect_inputs,
    normalize_options,
    parameter_line,
    split_sample,
    strip_suffix,
)
from promptgen.formats.validate import built_error, validate_section
from promptgen.jsonio import parse_json
from promptgen.model import ROLES, Message, ModelConfig, PromptUnderTest
from promptgen.rendering.render import check_syntax
from promptgen.yamlpos import (
    Path_,
    YamlLimitError,
    line_of,
    load_yaml,
    yaml_error_line,
    yaml_error_text,
)


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class GhMessage(_Open):
    role: str
    content: str


class PromptYml(_Open):
    name: str | None = None
    description: str | None = None
    model: str | None = None
    modelParameters: dict[str, Any] | None = None
    responseFormat: Literal["text", "json_object", "json_schema"] | None = None
    jsonSchema: str | dict[str, Any] | None = None
    messages: list[GhMessage]
    testData: list[dict[str, Any]] | None = None
    evaluators: list[dict[str, Any]] | None = None


def load(path: Path, text: str) -> PromptUnderTest:
    file = str(path)
    try:
        parsed = load_yaml(text)
    except YamlLimitError as err:
        raise PromptFormatError(
            yaml_error_text(err),
            file=file,
            line=yaml_error_line(err),
            hint="see the limits in docs/formats.md",
        ) from err
    except yaml.YAMLError as err:
        raise PromptFormatError(
            f"invalid YAML: {yaml_error_text(err)}",
            file=file,
            line=yaml_error_line(err),
            hint="fix the YAML syntax",
        ) from err
    raw = parsed.data
    if not isinstance(raw, dict) or "messages" not in raw:
        hint = "add a 'messages' list of {role, content}"
        if isinstance(raw, dict) and "jobs" in raw:
            hint = "this looks like a GitHub Actions workflow, not a prompt"
        raise PromptFormatError(
            "not a GitHub Models prompt: no 'messages' list", file=file, line=1, hint=hint
        )
    lines, starts = parsed.keys, parsed.content
    where: dict[str, Any] = {"file": file, "lines": lines}
    check_count(raw.get("messages"), MAX_MESSAGES, ("messages",), what="messages", **where)
    check_count(raw.get("testData"), MAX_TEST_SAMPLES, ("testData",), what="rows", **where)
    doc: Any = validate_section(PromptYml, raw, file=file, lines=lines, what="prompt.yml")
    check_parameters(doc.modelParameters, ("modelParameters",), what="prompt.yml", **where)
    messages = []
    for i, m in enumerate(doc.messages):
        line = starts.get(("messages", i, "content")) or line_of(lines, ("messages", i))
        role = m.role.strip().lower()
        if role not in ROLES:
            raise PromptFormatError(
                f"unknown role '{printable(m.role)}' in messages[{i}]",
                file=file,
                line=line_of(lines, ("messages", i, "role")),
                hint=f"use one of {', '.join(ROLES)}",
            )
        try:
            check_syntax(m.content, "mustache")
        except RenderError as err:
            err.file, err.line = file, (line or 1) + (err.line or 1) - 1
            raise
        messages.append(Message(role=role, content=m.content, line=line))
    known = set(PromptYml.model_fields)
    extra = {k: v for k, v in raw.items() if k not in known}
    warnings = [
        f"{file}:{lines.get((k,), '?')}: unknown key '{printable(k)}' kept as is" for k in extra
    ]
    model = _model(doc, file, lines)
    blocks: tuple[Path_, ...] = (("modelParameters",), ("responseFormat",))
    warnings += declared.warnings(
        model.parameters, lambda n: f"{file}:{parameter_line(lines, blocks, n) or '?'}"
    )
    evaluators = doc.evaluators or []
    try:
        prompt = PromptUnderTest(
            name=doc.name
            or strip_suffix(path.name, (".prompt.yml", ".prompt.yaml", ".yml", ".yaml")),
            description=doc.description,
            source=file,
            format="prompt.yml",
            model=model,
            messages=messages,
            test_samples=[split_sample(row) for row in doc.testData or []],
            checks=[check for _, check in string_checks(evaluators)],
            check_lines=[line_of(lines, ("evaluators", i)) for i, _ in string_checks(evaluators)],
            template_engine="mustache",
            frontmatter=raw,
            extra=extra,
            warnings=warnings,
        )
    except ValidationError as err:  # a safety net: the checks above catch what they know
        raise built_error(err, file=file, line=None, what="prompt.yml") from err
    detect_inputs(prompt)
    return prompt


# gh models' string evaluators: `equals` is case-sensitive, the others ignore case.
_STRING_CHECKS = {
    "equals": "equals",
    "contains": "icontains",
    "startsWith": "istarts-with",
    "endsWith": "iends-with",
}


def string_checks(evaluators: list[dict[str, Any]]) -> list[tuple[int, dict[str, Any]]]:
    """`string:` evaluators as deterministic checks, with their index in `evaluators` (the
    first non-empty key wins, as in gh models). An evaluator's `name` becomes the check's
    name (`{"icontains": "x", "name": "mentions x"}`). LLM and `uses:` evaluators are
    kept in the frontmatter, not run."""
    checks = []
    for i, evaluator in enumerate(evaluators):
        spec = evaluator.get("string")
        if not isinstance(spec, dict):
            continue
        for key, check in _STRING_CHECKS.items():
            if spec.get(key):
                named = evaluator.get("name")
                extra = {"name": named} if isinstance(named, str) and named.strip() else {}
                checks.append((i, {check: str(spec[key]), **extra}))
                break
    return checks


def evaluator_kind(evaluator: dict[str, Any]) -> str:
    """How promptgen treats one `evaluators:` entry: `string` (run as a check), `llm` or
    `uses` (kept, not run), or `unknown`."""
    for kind in ("string", "llm", "uses"):
        if kind in evaluator:
            return kind
    return "unknown"


def _model(doc: Any, file: str, lines: dict[Any, int]) -> ModelConfig:
    params = normalize_options(doc.modelParameters or {})
    response_format: Any = None
    if doc.responseFormat == "json_schema":
        schema = doc.jsonSchema
        if isinstance(schema, str):
            schema = parse_json(
                schema,
                what="jsonSchema",
                subject="jsonSchema",
                file=file,
                line=line_of(lines, ("jsonSchema",)),
                error=PromptFormatError,
                hint="jsonSchema must be a JSON string with 'name' and 'schema'",
            )
        if not isinstance(schema, dict) or not {"name", "schema"} <= set(schema):
            raise PromptFormatError(
                "responseFormat json_schema needs a jsonSchema with 'name' and 'schema'",
                file=file,
                line=line_of(lines, ("responseFormat",)),
                hint='add jsonSchema: \'{"name": ..., "schema": {...}}\'',
            )
        response_format = {"type": "json_schema", "json_schema": schema}
    elif doc.responseFormat:
        response_format = {"type": doc.responseFormat}
    if response_format is not None:
        params["response_format"] = response_format
    return ModelConfig(id=doc.model, parameters=params, response_format=response_format)
