"""YAML parsing that remembers where each value came from, for one-line errors."""

from __future__ import annotations

import yaml

Path_ = tuple[str | int, ...]


def _positions(text: str, line_offset: int) -> tuple[dict[Path_, int], dict[Path_, int]]:
    """(line of each key path, line where each scalar value's text begins), 1-based.

    Block scalars (`key: |`) begin on the line after the indicator. Both maps are empty
    when the text is not valid YAML (the caller reports that).
    """
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return {}, {}
    keys: dict[Path_, int] = {}
    content: dict[Path_, int] = {}

    def walk(node: yaml.Node, path: Path_) -> None:
        keys.setdefault(path, node.start_mark.line + 1 + line_offset)
        if isinstance(node, yaml.ScalarNode):
            block = node.style in ("|", ">")
            content[path] = node.start_mark.line + 1 + line_offset + (1 if block else 0)
        elif isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                key = key_node.value if isinstance(key_node, yaml.ScalarNode) else str(key_node)
                keys[(*path, key)] = key_node.start_mark.line + 1 + line_offset
                walk(value_node, (*path, key))
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                walk(item, (*path, i))

    if root is not None:
        walk(root, ())
    return keys, content


def node_lines(text: str, line_offset: int = 0) -> dict[Path_, int]:
    """Map every key path in a YAML document to its 1-based line number.

    `line_offset` is added so frontmatter lines match the lines of the whole file.
    """
    return _positions(text, line_offset)[0]


def content_lines(text: str, line_offset: int = 0) -> dict[Path_, int]:
    """Map key paths of scalar values to the line where the value's text begins."""
    return _positions(text, line_offset)[1]


def line_of(lines: dict[Path_, int], path: Path_) -> int | None:
    """The line of the longest known prefix of `path`."""
    for end in range(len(path), -1, -1):
        found = lines.get(tuple(path[:end]))
        if found is not None:
            return found
    return None


def yaml_error_line(err: yaml.YAMLError, line_offset: int = 0) -> int | None:
    mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
    return mark.line + 1 + line_offset if mark is not None else None


def yaml_error_text(err: yaml.YAMLError) -> str:
    problem = getattr(err, "problem", None)
    context = getattr(err, "context", None)
    parts = [p for p in (context, problem) if p]
    return ", ".join(parts) if parts else str(err).splitlines()[0]
