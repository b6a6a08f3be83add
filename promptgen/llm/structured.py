"""Structured output: pydantic model -> strict JSON Schema -> validated object.

Never CSV. The schema goes to the provider as a strict `json_schema` response format
where supported; otherwise the schema is stated in the prompt. Either way the answer is
validated (a list or string over its bound is cut to it: llm/fit.py), and one repair
turn quoting the validation error is allowed.
"""

from __future__ import annotations

import copy
import functools
import json
import re
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from promptgen.llm.fit import fit_json, fit_model, stated
from promptgen.llm.schema_walk import unmarked

_FENCE = re.compile(r"^\s*```(?:json|JSON)?\s*\n(.*?)\n\s*```\s*$", re.S)
# What providers refuse in a response format's name (OpenAI: ^[a-zA-Z0-9_-]{1,64}$).
_NOT_IN_NAME = re.compile(r"[^a-zA-Z0-9_-]+")


def strict_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON Schema in the strict form providers accept.

    Every object lists all its properties as required and forbids extra keys; `title`
    and `default` noise is dropped.
    """
    schema = copy.deepcopy(model.model_json_schema())

    def fix(node: Any) -> None:
        """`node` is a schema; maps of names to schemas are walked, never trimmed."""
        if isinstance(node, list):
            for value in node:
                fix(value)
            return
        if not isinstance(node, dict):
            return
        node.pop("title", None)
        node.pop("default", None)
        if node.get("type") == "object" and "properties" in node:
            node["required"] = list(node["properties"])
            node["additionalProperties"] = False
        for key, value in node.items():
            if key in ("properties", "$defs", "definitions", "patternProperties"):
                for sub in value.values():
                    fix(sub)
            else:
                fix(value)

    fix(schema)
    return schema


@dataclass
class OutputSpec:
    """What a structured answer must look like: a pydantic model or a raw JSON Schema."""

    name: str
    schema: dict[str, Any]
    model: type[BaseModel] | None = None
    strict: bool = True
    description: str | None = None  # a prompt's own response format may have one

    def parse(self, text: str) -> tuple[Any, str | None]:
        if self.model is not None:
            return parse(text, self.model)
        try:
            value = json.loads(extract_json(text))
        except json.JSONDecodeError as err:
            return None, f"not JSON: {err.msg}"
        from jsonschema import Draft202012Validator  # only when a schema is checked

        validator = Draft202012Validator(self.schema)
        errors = sorted(validator.iter_errors(value), key=str)
        if errors:
            # Over a maxItems or maxLength: cut to it, if that makes the answer valid.
            fitted, valid = fit_json(value, lambda v: list(validator.iter_errors(v)))
            if valid:
                return fitted, None
            first = errors[0]
            where = ".".join(str(p) for p in first.absolute_path) or "answer"
            return None, f"{where}: {stated(first) or first.message}"[:1500]
        return value, None


def output_spec(output: type[BaseModel] | dict[str, Any]) -> OutputSpec:
    """The spec of a pydantic model, of a JSON Schema (named after its title, not
    strict), or of a `json_schema` response format as a prompt declares it
    (`{"type": "json_schema", "json_schema": {"name", "strict", "schema", ...}}`: its
    name, strictness and description as written; no JSON Schema has that type)."""
    if isinstance(output, dict):
        declared = output.get("json_schema") if output.get("type") == "json_schema" else None
        if isinstance(declared, dict) and isinstance(declared.get("schema"), dict):
            about = declared.get("description")
            return OutputSpec(
                name=format_name(declared.get("name")),
                schema=declared["schema"],
                strict=declared.get("strict") is True,
                description=about if isinstance(about, str) else None,
            )
        return OutputSpec(name=format_name(output.get("title")), schema=output, strict=False)
    return _model_spec(output)


def format_name(text: Any) -> str:
    """A response format's name as providers accept it (`^[a-zA-Z0-9_-]{1,64}$`): each
    run of other characters becomes one `_`, none at either end ("Ticket triage (v2)" ->
    "Ticket_triage_v2"); "answer" when nothing is left."""
    name = _NOT_IN_NAME.sub("_", str(text or "")).strip("_")[:64].rstrip("_")
    return name or "answer"


@functools.lru_cache(maxsize=256)
def _model_spec(model: type[BaseModel]) -> OutputSpec:
    """Schemas of pydantic models are built once, not on every call."""
    return OutputSpec(name=model.__name__, schema=strict_schema(model), model=model)


_LENGTH_KEYWORDS = ("minLength", "maxLength", "minItems", "maxItems")


# id(schema) -> (schema, its provider form): a stage sends one schema object thousands of
# times (its judge's), so the walk below is done once per schema, not once per call. The
# schema is held, so its id is not reused while cached; the result is read-only.
_PROVIDER_FORMS: dict[int, tuple[dict[str, Any], dict[str, Any]]] = {}


def provider_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema without length bounds, which some providers' strict modes refuse.

    The bounds still apply: the local grammar enforces them and validation checks them.
    """
    known = _PROVIDER_FORMS.get(id(schema))
    if known is not None and known[0] is schema:
        return known[1]
    if len(_PROVIDER_FORMS) >= 512:
        _PROVIDER_FORMS.clear()
    form = _strip_lengths(schema)
    _PROVIDER_FORMS[id(schema)] = (schema, form)
    return form


def _strip_lengths(schema: dict[str, Any]) -> dict[str, Any]:
    def strip(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: strip(v) for k, v in node.items() if k not in _LENGTH_KEYWORDS}
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node

    return strip(schema)


def schema_instructions(schema: dict[str, Any]) -> str:
    return (
        "Answer with one JSON object only (no prose, no code fence) that validates "
        f"against this JSON Schema:\n{json.dumps(unmarked(schema), ensure_ascii=False)}"
    )


def extract_json(text: str) -> str:
    """The JSON part of a reply: fences stripped, else the outermost {...} span."""
    stripped = text.strip()
    fenced = _FENCE.match(stripped)
    if fenced:
        return fenced.group(1).strip()
    if stripped.startswith(("{", "[")):
        return stripped
    start, end = stripped.find("{"), stripped.rfind("}")
    return stripped[start : end + 1] if 0 <= start < end else stripped


def parse(text: str, model: type[BaseModel]) -> tuple[BaseModel | None, str | None]:
    """(object, None) when `text` validates, else (None, a short error for the repair turn)."""
    raw = extract_json(text)
    try:
        return model.model_validate_json(raw), None
    except ValidationError as err:
        fitted = fit_model(raw, model, err)  # a list or string over its bound, cut to it
        if fitted is not None:
            return fitted, None
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'answer'}: {e['msg']}" for e in err.errors()
        )
        return None, problems[:1500]


def repair_messages(
    messages: list[dict[str, Any]], reply: str, error: str, schema: dict[str, Any]
) -> list[dict[str, Any]]:
    return [
        *messages,
        {"role": "assistant", "content": reply},
        {
            "role": "user",
            "content": (
                f"That answer is not valid: {error}\n"
                f"{schema_instructions(schema)}\nReply with the corrected JSON object only."
            ),
        },
    ]
