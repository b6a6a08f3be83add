"""Prompty v2's top-level `tools:` as the OpenAI function tools the model under test is
sent, as Prompty's runtime projects them: a `kind: function` tool becomes
`{"type": "function", "function": {name, description, parameters, strict}}`, its
parameters (Prompty properties) a JSON Schema. A tool written in OpenAI's shape is sent
as it is; other kinds (mcp, openapi, prompty, custom) are not sent, a warning each."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from promptgen.bounds import printable

# Prompty property kinds -> JSON Schema types.
_TYPES = {
    "string": "string",
    "integer": "integer",
    "float": "number",
    "number": "number",
    "boolean": "boolean",
    "array": "array",
    "object": "object",
}


def function_tools(
    tools: Any, where: Callable[[int | None], str]
) -> tuple[list[dict[str, Any]], list[str]]:
    """(the tools sent, warnings); `where(i)` names the place of tool `i` (None: the key)."""
    if tools is None:
        return [], []
    if not isinstance(tools, list):
        return [], [f"{where(None)}: 'tools' is not sent: it should be a list of tools"]
    sent, warnings = [], []
    for i, tool in enumerate(tools):
        if isinstance(tool, dict) and tool.get("type") == "function" and "function" in tool:
            sent.append(tool)  # OpenAI's own shape
            continue
        kind = tool.get("kind") if isinstance(tool, dict) else None
        name = tool.get("name") if isinstance(tool, dict) else tool  # a name alone
        if kind == "function" and isinstance(name, str) and name:
            sent.append(_function(tool))
            continue
        what = f"tool '{printable(name)}'" if isinstance(name, str) else f"tool {i + 1}"
        why = "promptgen sends function tools" if kind != "function" else "it has no name"
        shown = f" (kind {printable(kind)})" if isinstance(kind, str) else ""
        warnings.append(f"{where(i)}: {what}{shown} is not sent: {why}")
    return sent, warnings


def _function(tool: dict[str, Any]) -> dict[str, Any]:
    strict = tool.get("strict") is True
    function: dict[str, Any] = {"name": tool["name"]}
    if isinstance(tool.get("description"), str):
        function["description"] = tool["description"]
    function["parameters"] = _parameters(tool.get("parameters"), strict)
    if strict:
        function["strict"] = True
    return {"type": "function", "function": function}


def _parameters(value: Any, strict: bool) -> dict[str, Any]:
    """Prompty's parameters (a list of properties, or `{properties: [...]}`) as a JSON
    Schema object; one written as a JSON Schema already is kept."""
    if isinstance(value, dict) and not isinstance(value.get("properties"), list):
        return value
    listed = value.get("properties") if isinstance(value, dict) else value
    return _object(listed if isinstance(listed, list) else [], strict)


def _object(properties: list[Any], strict: bool) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": {}}
    required = []
    for prop in properties:
        if not isinstance(prop, dict) or not isinstance(prop.get("name"), str):
            continue
        schema["properties"][prop["name"]] = _property(prop, strict)
        if prop.get("required") is True:
            required.append(prop["name"])
    if required:
        schema["required"] = required
    if strict:
        schema["additionalProperties"] = False
    return schema


def _property(prop: dict[str, Any], strict: bool) -> dict[str, Any]:
    kind = prop.get("kind") or prop.get("type")
    if kind == "object" and isinstance(prop.get("properties"), list):
        node = _object(prop["properties"], strict)
    else:
        node = {"type": _TYPES[kind]} if isinstance(kind, str) and kind in _TYPES else {}
    if kind == "array" and isinstance(prop.get("items"), dict):
        node["items"] = _property(prop["items"], strict)
    if isinstance(prop.get("description"), str):
        node["description"] = prop["description"]
    values = prop.get("enumValues") or prop.get("enum")
    if isinstance(values, list):
        node["enum"] = values
    if "default" in prop:
        node["default"] = prop["default"]
    return node
