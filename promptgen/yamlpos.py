"""YAML parsing that remembers where each value came from, for one-line errors."""

from __future__ import annotations

from typing import Any

import yaml

Path_ = tuple[str | int, ...]


def node_lines(text: str, line_offset: int = 0) -> dict[Path_, int]:
    """Map every key path in a YAML document to its 1-based line number.

    `line_offset` is added so frontmatter lines match the lines of the whole file.
    Returns an empty map when the text is not valid YAML (the caller reports that).
    """
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return {}
    lines: dict[Path_, int] = {}

    def walk(node: yaml.Node, path: Path_) -> None:
        lines[path] = node.start_mark.line + 1 + line_offset
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                key = key_node.value if isinstance(key_node, yaml.ScalarNode) else str(key_node)
                lines[(*path, key)] = key_node.start_mark.line + 1 + line_offset
                walk_value(value_node, (*path, key))
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                walk(item, (*path, i))

    def walk_value(node: yaml.Node, path: Path_) -> None:
        # Keep the key's line for the path itself; children get their own lines.
        key_line = lines[path]
        walk(node, path)
        lines[path] = key_line

    if root is not None:
        walk(root, ())
    return lines


def content_lines(text: str, line_offset: int = 0) -> dict[Path_, int]:
    """Map key paths of scalar values to the line where the value's text begins.

    For block scalars (`key: |`) that is the line after the indicator.
    """
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return {}
    lines: dict[Path_, int] = {}

    def walk(node: yaml.Node, path: Path_) -> None:
        if isinstance(node, yaml.ScalarNode):
            block = node.style in ("|", ">")
            lines[path] = node.start_mark.line + 1 + line_offset + (1 if block else 0)
        elif isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                walk(value_node, (*path, getattr(key_node, "value", str(key_node))))
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                walk(item, (*path, i))

    if root is not None:
        walk(root, ())
    return lines


def line_of(lines: dict[Path_, int], path: Path_) -> int | None:
    """The line of the longest known prefix of `path`."""
    for end in range(len(path), -1, -1):
        found = lines.get(tuple(path[:end]))
        if found is not None:
            return found
    return None


def safe_load(text: str) -> Any:
    return yaml.safe_load(text)


def yaml_error_line(err: yaml.YAMLError, line_offset: int = 0) -> int | None:
    mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
    return mark.line + 1 + line_offset if mark is not None else None


def yaml_error_text(err: yaml.YAMLError) -> str:
    problem = getattr(err, "problem", None)
    context = getattr(err, "context", None)
    parts = [p for p in (context, problem) if p]
    return ", ".join(parts) if parts else str(err).splitlines()[0]
