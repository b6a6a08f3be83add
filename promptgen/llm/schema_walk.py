"""Walking a JSON Schema as a provider reads it: every sub-schema with its path, `$defs`
inlined or followed, how often a position repeats once inlined, how deep objects nest.

What `llm/shaping.py` and `llm/schema_rules.py` share; no rule of any provider here.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from promptgen.kinds import JSON_TEXT

DEFS = "#/$defs/"

Path = tuple[str | int, ...]
Schema = dict[str, Any]


def subschemas(node: Schema) -> Iterator[Path]:
    """The steps from `node` to each schema under it: a property, a definition, the
    items, a branch of anyOf/oneOf/allOf."""
    for key in ("properties", "$defs"):
        value = node.get(key)
        if isinstance(value, dict):
            for name in value:
                yield (key, name)
    if isinstance(node.get("items"), dict):
        yield ("items",)
    for key in ("anyOf", "oneOf", "allOf"):
        branches = node.get(key)
        if isinstance(branches, list):
            for i in range(len(branches)):
                yield (key, i)


def at(node: Any, path: Path) -> Any:
    for step in path:
        node = node[step]
    return node


def walk(node: Any, path: Path = ()) -> Iterator[tuple[Path, Schema]]:
    """Every schema in `node` as written (a `$ref` is not followed), with its path."""
    if not isinstance(node, dict):
        return
    yield path, node
    for step in subschemas(node):
        yield from walk(at(node, step), path + step)


def types(node: Schema) -> set[str]:
    kind = node.get("type")
    if isinstance(kind, str):
        return {kind}
    return {t for t in kind or () if isinstance(t, str)}


def ref_name(node: Schema) -> str | None:
    ref = node.get("$ref")
    return ref.removeprefix(DEFS) if isinstance(ref, str) and ref.startswith(DEFS) else None


def unmarked(node: Any) -> Any:
    """`node` without promptgen's own markers (JSON_TEXT), which no provider reads."""
    if isinstance(node, dict):
        return {k: unmarked(v) for k, v in node.items() if k != JSON_TEXT}
    if isinstance(node, list):
        return [unmarked(v) for v in node]
    return node


def inlined(schema: Schema) -> Schema:
    """`schema` with every local `$ref` replaced by the definition it names, as litellm
    does for Anthropic (keywords beside a `$ref` are kept over the definition's)."""
    defs = schema.get("$defs", {})

    def expand(node: Any, seen: tuple[str, ...]) -> Any:
        if isinstance(node, list):
            return [expand(v, seen) for v in node]
        if not isinstance(node, dict):
            return node
        name = ref_name(node)
        if name is not None and name in defs and name not in seen:
            rest = {k: v for k, v in node.items() if k != "$ref"}
            return {**expand(defs[name], (*seen, name)), **rest}
        return {k: expand(v, seen) for k, v in node.items() if k != "$defs"}

    result = expand(schema, ())
    assert isinstance(result, dict)
    return result


def uses(schema: Schema) -> dict[Path, int]:
    """How many times each schema position appears once `$defs` are inlined: the
    positions of a definition count once per path that reaches it."""
    defs = schema.get("$defs", {})
    counts: dict[Path, int] = {}

    def visit(node: Any, path: Path, seen: tuple[str, ...]) -> None:
        if not isinstance(node, dict):
            return
        counts[path] = counts.get(path, 0) + 1
        name = ref_name(node)
        if name is not None and name in defs and name not in seen:
            visit(defs[name], ("$defs", name), (*seen, name))
        for step in subschemas(node):
            if step[0] != "$defs":
                visit(at(node, step), path + step, seen)

    visit(schema, (), ())
    return counts


def is_union(node: Schema) -> bool:
    return isinstance(node.get("anyOf"), list) or isinstance(node.get("type"), list)


def union_count(schema: Schema) -> int:
    """Fields with a union type (anyOf or a type list) once `$defs` are inlined."""
    return sum(n for path, n in uses(schema).items() if is_union(at(schema, path)))


def optional_count(schema: Schema) -> int:
    """Properties not listed in `required`, once `$defs` are inlined."""
    total = 0
    for path, n in uses(schema).items():
        node = at(schema, path)
        required = set(node.get("required", []))
        total += n * sum(1 for name in node.get("properties", {}) if name not in required)
    return total


# An object on a path: its level (the root object is 1), its path, whether it is marked.
Level = tuple[int, Path, bool]


def deepest(schema: Schema) -> tuple[int, list[Level]]:
    """The most object levels on any path (`$ref` followed), and the objects on it."""
    defs = schema.get("$defs", {})

    def visit(node: Any, path: Path, level: int, seen: tuple[str, ...]) -> tuple[int, list[Level]]:
        if not isinstance(node, dict):
            return level, []
        name = ref_name(node)
        if name is not None and isinstance(defs.get(name), dict):
            if name in seen:
                return level, []
            node, path, seen = defs[name], ("$defs", name), (*seen, name)
        here: list[Level] = []
        if "object" in types(node):
            level += 1
            here = [(level, path, bool(node.get(JSON_TEXT)))]
        best: tuple[int, list[Level]] = (level, [])
        for step in subschemas(node):
            if step[0] != "$defs":
                found = visit(at(node, step), path + step, level, seen)
                if found[0] > best[0]:
                    best = found
        return best[0], here + best[1]

    return visit(schema, (), 0, ())


def object_depth(schema: Schema) -> int:
    """Object levels on the deepest path (the root object is level 1; `$ref` followed)."""
    return deepest(schema)[0]
