"""What a structured-output schema breaks under a provider profile (llm/profiles.py).

The same rules `llm/shaping.py` shapes to, read the other way: the tests check every
built-in schema against them, and the enforcing fake server (tests/fakellm.py) refuses
a request for the problems a provider would refuse (`Problem.refused`).
"""

from __future__ import annotations

from dataclasses import dataclass

from promptgen.kinds import JSON_TEXT
from promptgen.llm.profiles import NAME_RULE, OTHER, PROFILES, STRUCTURE, TOLD, Profile
from promptgen.llm.schema_walk import (
    Path,
    Schema,
    inlined,
    object_depth,
    optional_count,
    types,
    union_count,
    walk,
)


@dataclass(frozen=True)
class Problem:
    """One rule a schema breaks. `refused`: the provider answers it with HTTP 400; else
    it silently does not hold (an ignored bound, a grammar that goes wrong)."""

    rule: str
    where: Path
    text: str
    refused: bool


def context(path: Path) -> str:
    """A schema position as OpenAI's errors show it: `('properties', 'score')`."""
    return "(" + ", ".join(repr(str(p)) for p in path) + ")"


def problems(schema: Schema, profile: str, name: str | None = None) -> list[Problem]:
    """Every rule of `profile` that `schema` (as sent, under the format name `name`)
    breaks, in schema order, then the whole schema's limits."""
    rules = PROFILES[profile]
    found: list[Problem] = []
    if rules.name_rule and name is not None and not NAME_RULE.match(name):
        text = f"name {name!r} does not match the pattern {NAME_RULE.pattern}"
        found.append(Problem("name", (), text, True))
    if rules.root_object and (schema.get("type") != "object" or "anyOf" in schema):
        found.append(Problem("root", (), "the root must be an object, not anyOf", True))
    if rules.inline_refs and "$defs" in schema:
        found.append(Problem("refs", (), "$defs must be inlined for this server", False))
    for path, node in walk(schema):
        found += _node_problems(node, path, rules)
    found += _limits(schema, rules)
    return found


def _node_problems(node: Schema, path: Path, rules: Profile) -> list[Problem]:
    found = []
    where = context(path)
    for key in node:
        if key in TOLD and not rules.keeps(node, key):
            text = f"In context={where}, '{key}' is not permitted."
            found.append(Problem("keyword", path, text, key in rules.refuses))
        elif key in OTHER:
            text = f"In context={where}, '{key}' is not supported."
            found.append(Problem("keyword", path, text, rules.strict_objects))
        elif key not in STRUCTURE and key not in TOLD and key != JSON_TEXT:
            found.append(
                Problem("keyword", path, f"In context={where}, '{key}' is unknown.", False)
            )
        elif key == JSON_TEXT:
            found.append(Problem("marker", path, f"In context={where}, '{key}' is ours.", False))
    strict = rules.strict_objects and "object" in types(node) and "properties" in node
    if strict and node.get("additionalProperties") is not False:
        text = f"In context={where}, 'additionalProperties' is required to be false."
        found.append(Problem("strict", path, text, True))
    if rules.all_required and "properties" in node:
        missing = [k for k in node["properties"] if k not in node.get("required", [])]
        if missing:
            text = f"In context={where}, 'required' is required to include {missing[0]!r}."
            found.append(Problem("strict", path, text, True))
    return found


def _limits(schema: Schema, rules: Profile) -> list[Problem]:
    """The limits on the whole schema: nesting, properties, unions, optional fields,
    enum values and characters (counted with `$defs` inlined where the provider inlines
    them first)."""
    found = []
    counted = inlined(schema) if rules.inlined_by_litellm or rules.inline_refs else schema
    if rules.max_depth is not None and (depth := object_depth(schema)) > rules.max_depth:
        text = f"{depth} levels of nesting exceeds limit of {rules.max_depth}"
        found.append(Problem("depth", (), text, True))
    if rules.max_properties is not None:
        total = sum(len(node.get("properties", {})) for _, node in walk(counted))
        if total > rules.max_properties:
            text = f"{total} object properties exceeds limit of {rules.max_properties}"
            found.append(Problem("properties", (), text, True))
    if rules.max_unions is not None and (unions := union_count(schema)) > rules.max_unions:
        text = (
            f"Schemas contains too many parameters with union types ({unions} parameters "
            f"with type arrays or anyOf) which exceeds the limit: {rules.max_unions}"
        )
        found.append(Problem("unions", (), text, True))
    if rules.max_optional is not None:
        optional = optional_count(schema)
        if optional > rules.max_optional:
            text = f"{optional} optional parameters exceeds the limit: {rules.max_optional}"
            found.append(Problem("optional", (), text, True))
    values, chars = _sizes(counted)
    if rules.max_enum_values is not None and values > rules.max_enum_values:
        text = f"{values} enum values exceeds limit of {rules.max_enum_values}"
        found.append(Problem("enum", (), text, True))
    if rules.max_names_chars is not None and chars > rules.max_names_chars:
        limit = rules.max_names_chars
        text = f"{chars} characters of names and values exceeds limit of {limit}"
        found.append(Problem("size", (), text, True))
    return found


def _sizes(schema: Schema) -> tuple[int, int]:
    """Enum values, and characters of property names, definition names, enum and const
    values."""
    values = 0
    chars = sum(len(str(k)) for k in schema.get("$defs", {}))
    for _, node in walk(schema):
        chars += sum(len(str(k)) for k in node.get("properties", {}))
        enum = node.get("enum") or []
        values += len(enum)
        chars += sum(len(v) for v in enum if isinstance(v, str))
        const = node.get("const")
        chars += len(const) if isinstance(const, str) else 0
    return values, chars
