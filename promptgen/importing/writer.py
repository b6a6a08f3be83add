"""An imported prompt written as a `.prompty`: frontmatter (name, description, inputs
with types, model parameters) and `system:`/`user:` sections with `{{name}}`."""

from __future__ import annotations

import re
from typing import Any

import yaml

from promptgen.importing.pieces import Imported, Var

# Text Jinja would read as syntax, written as a Jinja string that prints it.
_SYNTAX = re.compile(r"\{[{%#]")
# A line the Prompty body parser would take for a role marker (formats/body.py).
_MARKER_LINE = re.compile(r"^\s*#?\s*[A-Za-z_][\w-]*(?:\[[^\]]*\])?\s*:\s*$")
_INTEGER = re.compile(r"^(n|num|number|max|min|count)_|_(count|num|number|limit)$|^count$")
_BOOLEAN = re.compile(r"^(is|has|should|can|use|include)_")


def input_type(name: str, sample: Any = None) -> str:
    """A sample's JSON type; else what the name says (`n_items`, `is_draft`); else string."""
    if isinstance(sample, bool):
        return "boolean"
    if isinstance(sample, int):
        return "integer"
    if isinstance(sample, float):
        return "number"
    if isinstance(sample, list):
        return "array"
    if isinstance(sample, dict):
        return "object"
    if sample is None:
        lowered = name.lower()
        if _INTEGER.search(lowered):
            return "integer"
        if _BOOLEAN.search(lowered):
            return "boolean"
    return "string"


def escape_text(text: str) -> str:
    """Literal text that renders as itself: `{{`, `{%`, `{#` printed by Jinja."""
    return _SYNTAX.sub(lambda m: "{{ '" + m.group() + "' }}", text)


def _protect_markers(content: str) -> str:
    """A line such as `user:` inside a message would start a new message when read back."""
    lines = content.split("\n")
    for i, line in enumerate(lines):
        if _MARKER_LINE.match(line):
            quoted = line.replace("\\", "\\\\").replace("'", "\\'")
            lines[i] = "{{ '" + quoted + "' }}"
    return "\n".join(lines)


def _literal(text: str, before_var: bool, after_var: bool) -> str:
    """A brace touching a placeholder would join its braces (`{{{name}}`): printed too."""
    text = escape_text(text)
    if before_var and text.endswith("{"):
        text = text[:-1] + "{{ '{' }}"
    if after_var and text.startswith("}"):
        text = "{{ '}' }}" + text[1:]
    return text


def body(imported: Imported) -> str:
    sections = []
    for message in imported.messages:
        pieces = message.pieces
        content = "".join(
            "{{" + p.name + "}}"
            if isinstance(p, Var)
            else _literal(
                p,
                i + 1 < len(pieces) and isinstance(pieces[i + 1], Var),
                i > 0 and isinstance(pieces[i - 1], Var),
            )
            for i, p in enumerate(pieces)
        )
        sections.append(f"{message.role}:\n{_protect_markers(content.strip(chr(10)))}")
    return "\n\n".join(sections) + "\n"


def frontmatter(imported: Imported, name: str, description: str) -> dict[str, Any]:
    front: dict[str, Any] = {"name": name, "description": description}
    if imported.model or imported.parameters:
        model: dict[str, Any] = {"api": "chat"}
        if imported.model:
            model["id"] = imported.model
        if imported.parameters:
            model["parameters"] = dict(imported.parameters)
        front["model"] = model
    inputs: dict[str, Any] = {}
    for var in imported.variables:
        sample = imported.samples.get(var)
        spec: dict[str, Any] = {"type": imported.types.get(var) or input_type(var, sample)}
        if imported.descriptions.get(var):
            spec["description"] = imported.descriptions[var]
        if sample is not None:
            spec["sample"] = sample
        inputs[var] = spec
    if inputs:
        front["inputs"] = inputs
    return front


def prompty_text(imported: Imported, name: str, description: str) -> str:
    front = yaml.safe_dump(
        frontmatter(imported, name, description),
        sort_keys=False,
        allow_unicode=True,
        width=88,
        default_flow_style=False,
    )
    return f"---\n{front}---\n{body(imported)}"
