"""YAML parsing that remembers where each value came from, and is safe on hostile input.

`load_yaml` builds the data from libyaml's event stream in one loop, without recursion.
It records the line of every key (for one-line errors) and refuses, with the line,
what would exhaust memory, time or the stack later (limits in promptgen.bounds):
nesting deeper than MAX_NESTING, more than MAX_YAML_VALUES values, more than
MAX_YAML_ALIASES aliases or aliases that expand to more than MAX_YAML_ALIAS_NODES
values ("billion laughs"), recursive aliases, numbers over MAX_INT_DIGITS digits and
lone surrogates. Values are what `yaml.safe_load` gives (merge keys `<<` included),
except that tags naming non-JSON types (`!!binary`, `!!set`, `!!omap`, `!!pairs`) are
refused. It is also several times faster than `yaml.safe_load` on large documents.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml
from yaml import events
from yaml.constructor import ConstructorError
from yaml.nodes import ScalarNode

from promptgen.bounds import (
    MAX_INT_DIGITS,
    MAX_NESTING,
    MAX_YAML_ALIAS_NODES,
    MAX_YAML_ALIASES,
    MAX_YAML_VALUES,
)
from promptgen.jsonio import LONE_SURROGATE

Path_ = tuple[str | int, ...]

_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_TAG = "tag:yaml.org,2002:"
_STR, _MERGE = _TAG + "str", _TAG + "merge"
_SCALAR_TAGS = {_TAG + t for t in ("str", "null", "bool", "int", "float", "timestamp")}
_COLLECTION_TAGS = {None, "!", _TAG + "seq", _TAG + "map"}
_FIRST_CHARS = frozenset(k for k in yaml.SafeLoader.yaml_implicit_resolvers if k is not None)
_WILDCARD = None in yaml.SafeLoader.yaml_implicit_resolvers
MAX_POSITIONS = 200_000  # lines kept per document; past it, only top-level keys
_BUILDING = object()
_MERGE_KEY = object()
_MISSING = object()


class YamlLimitError(yaml.MarkedYAMLError):
    """The document is valid YAML, but over one of promptgen.bounds' limits."""


@dataclass
class YamlDoc:
    """A parsed document: the data, the line of each key path (1-based, offset applied),
    and the line where each scalar value's text begins (block scalars: the line after
    `|`/`>`)."""

    data: Any
    keys: dict[Path_, int] = field(default_factory=dict)
    content: dict[Path_, int] = field(default_factory=dict)


@dataclass(eq=False)
class _Frame:
    value: Any  # the list or dict being built
    path: Path_
    mark: Any
    anchor: str | None
    nodes: int = 1  # values inside, aliases expanded
    key: Any = _MISSING
    merges: list[Any] = field(default_factory=list)


def _error(problem: str, mark: Any, cls: type[yaml.MarkedYAMLError] = YamlLimitError) -> Any:
    return cls(None, None, problem, mark)


class _Builder:
    def __init__(self, text: str, line_offset: int) -> None:
        self.offset = line_offset + 1
        self.doc = YamlDoc(None)
        self.stack: list[_Frame] = []
        self.anchors: dict[str, tuple[Any, int]] = {}
        self.aliases = 0
        self.alias_nodes = 0
        self.recorded = 0
        self.values = 0
        self.surrogates = "\\u" in text or "\\U" in text
        self.root: Any = _MISSING

    @property
    def recording(self) -> bool:
        """Whether lines of values at the current depth are still recorded."""
        return self.recorded < MAX_POSITIONS or len(self.stack) <= 1

    def record(self, path: Path_, line: int, content: int | None) -> None:
        if self.recorded >= MAX_POSITIONS and len(path) > 1:
            return
        self.recorded += 1
        self.doc.keys.setdefault(path, line)
        if content is not None:
            self.doc.content[path] = content

    def child_path(self) -> Path_ | None:
        if not self.stack:
            return ()
        frame = self.stack[-1]
        if isinstance(frame.value, list):
            return (*frame.path, len(frame.value))
        if frame.key is _MISSING or frame.key is _MERGE_KEY:
            return None  # a key, or merged in: no path of its own
        return (*frame.path, frame.key)

    def count(self, mark: Any) -> None:
        self.values += 1
        if self.values > MAX_YAML_VALUES:
            raise _error(
                f"more than {MAX_YAML_VALUES:,} values in one YAML document "
                "(put test data in a JSON Lines or CSV file)",
                mark,
            )

    def scalar(self, loader: Any, event: Any) -> Any:
        self.count(event.start_mark)
        value, tag = event.value, event.tag
        if self.surrogates and LONE_SURROGATE.search(value):
            raise _error("a lone surrogate (an unpaired \\ud800-\\udfff escape)", event.start_mark)
        if tag is None or tag == "!":
            if not event.implicit[0] or (value and value[0] not in _FIRST_CHARS and not _WILDCARD):
                return value
            tag = loader.resolve(ScalarNode, value, (True, False))
        if tag == _STR:
            return value
        if tag == _MERGE:
            return _MERGE_KEY
        if tag not in _SCALAR_TAGS:
            raise _error(
                f"unsupported YAML tag {tag!r} (promptgen reads strings, numbers, booleans, "
                "null, dates, lists and mappings)",
                event.start_mark,
                ConstructorError,
            )
        node = ScalarNode(tag, value, event.start_mark, event.end_mark, style=event.style)
        try:
            return loader.yaml_constructors[tag](loader, node)
        except Exception as err:  # the constructors' own errors: `!!int ""` is IndexError
            if tag == _TAG + "int" and isinstance(err, ValueError) and len(value) > MAX_INT_DIGITS:
                raise _error(
                    f"a number with more than {MAX_INT_DIGITS:,} digits", event.start_mark
                ) from err
            shown = tag.removeprefix(_TAG)
            raise _error(
                f"cannot read {value[:40]!r} as {shown}", event.start_mark, ConstructorError
            ) from err

    def add(
        self, value: Any, mark: Any, nodes: int, path: Path_ | None, content: int | None
    ) -> None:
        """Put a finished value into its parent; `path` (None: already recorded) and
        `content` are recorded for error lines."""
        line = mark.line + self.offset
        if path is not None:
            self.record(path, line, content)
        as_key = bool(self.stack) and isinstance(self.stack[-1].value, dict)
        if value is _MERGE_KEY and not (as_key and self.stack[-1].key is _MISSING):
            raise _error("'<<' (a merge key) is only allowed as a key", mark, ConstructorError)
        if not self.stack:
            self.root = value
            return
        frame = self.stack[-1]
        frame.nodes += nodes
        if isinstance(frame.value, list):
            frame.value.append(value)
        elif frame.key is _MISSING:
            if isinstance(value, (list, dict)):  # as yaml.safe_load
                raise _error("found unhashable key", mark, ConstructorError)
            frame.key = value
            if value is not _MERGE_KEY and self.recording:
                self.record((*frame.path, value), line, None)
        elif frame.key is _MERGE_KEY:
            maps = value if isinstance(value, list) else [value]
            if not all(isinstance(m, dict) for m in maps):
                raise _error(
                    "expected a mapping or list of mappings for merging", mark, ConstructorError
                )
            frame.merges.append(maps)
            frame.key = _MISSING
        else:
            frame.value[frame.key] = value
            frame.key = _MISSING

    def anchor(self, event: Any) -> None:
        """Register the event's anchor (a second one of the same name is an error, as in
        yaml.safe_load); its value is filled in when the node is built."""
        if event.anchor is None:
            return
        if event.anchor in self.anchors:
            raise _error(
                f"found duplicate anchor {event.anchor!r}",
                event.start_mark,
                yaml.composer.ComposerError,
            )
        self.anchors[event.anchor] = (_BUILDING, 0)

    def scalar_event(self, loader: Any, event: Any) -> None:
        self.anchor(event)
        path = self.child_path() if self.recording else None
        value = self.scalar(loader, event)
        if event.anchor is not None:
            self.anchors[event.anchor] = (value, 1)
        line = event.start_mark.line + self.offset
        content = line + (1 if event.style in ("|", ">") else 0)
        self.add(value, event.start_mark, 1, path, content)

    def start(self, event: Any, value: Any) -> None:
        if event.tag not in _COLLECTION_TAGS:
            raise _error(
                f"unsupported YAML tag {event.tag!r} (promptgen reads plain lists and mappings)",
                event.start_mark,
                ConstructorError,
            )
        self.count(event.start_mark)
        if len(self.stack) >= MAX_NESTING:
            raise _error(
                f"lists and mappings nested more than {MAX_NESTING} levels deep",
                event.start_mark,
            )
        path = self.child_path() if self.recording else None
        self.anchor(event)
        if path is not None:
            self.record(path, event.start_mark.line + self.offset, None)
        self.stack.append(
            _Frame(value, path if path is not None else ("…",), event.start_mark, event.anchor)
        )

    def end(self) -> None:
        frame = self.stack.pop()
        value = frame.value
        if frame.merges:
            merged: dict[Any, Any] = {}
            for maps in frame.merges:
                for mapping in reversed(maps):  # earlier mappings in a list win
                    merged.update(mapping)
            merged.update(value)  # and the mapping's own keys win over all
            value = merged
        if frame.anchor is not None:
            self.anchors[frame.anchor] = (value, frame.nodes)
        self.add(value, frame.mark, frame.nodes, None, None)

    def alias(self, event: Any) -> None:
        self.aliases += 1
        if self.aliases > MAX_YAML_ALIASES:
            raise _error(f"more than {MAX_YAML_ALIASES:,} aliases (*name)", event.start_mark)
        found = self.anchors.get(event.anchor)
        if found is None:
            raise _error(
                f"found undefined alias {event.anchor!r}",
                event.start_mark,
                yaml.composer.ComposerError,
            )
        value, nodes = found
        if value is _BUILDING:
            raise _error(f"alias *{event.anchor} refers to its own parent", event.start_mark)
        self.alias_nodes += nodes
        if self.alias_nodes > MAX_YAML_ALIAS_NODES:
            raise _error(
                f"aliases expand to more than {MAX_YAML_ALIAS_NODES:,} values "
                "(a 'billion laughs' document?)",
                event.start_mark,
            )
        self.add(
            value, event.start_mark, nodes, self.child_path() if self.recording else None, None
        )


def load_yaml(text: str, line_offset: int = 0) -> YamlDoc:
    """Parse one YAML document (see the module docstring). Raises yaml.YAMLError:
    YamlLimitError for a document over a limit, another MarkedYAMLError for bad YAML."""
    loader = _Loader(text)
    builder = _Builder(text, line_offset)
    documents = 0
    first_mark = None
    get_event = loader.get_event
    try:
        while True:
            event = get_event()
            kind = type(event)
            if kind is events.ScalarEvent:
                builder.scalar_event(loader, event)
            elif kind is events.MappingStartEvent:
                builder.start(event, {})
            elif kind is events.SequenceStartEvent:
                builder.start(event, [])
            elif kind is events.MappingEndEvent or kind is events.SequenceEndEvent:
                builder.end()
            elif kind is events.AliasEvent:
                builder.alias(event)
            elif kind is events.DocumentStartEvent:
                documents += 1
                if documents > 1:
                    raise yaml.composer.ComposerError(
                        "expected a single document in the stream",
                        first_mark,
                        "but found another document",
                        event.start_mark,
                    )
                first_mark = event.start_mark
            elif kind is events.StreamEndEvent:
                break
    except yaml.scanner.ScannerError as err:
        # libyaml 0.2.6 (PyYAML 6.0.4 wheels) stops deep nesting itself, at 1,000 levels:
        # the same limit as ours, said our way.
        if "maximum nesting depth" not in str(err.problem):
            raise
        raise _error(
            f"lists and mappings nested more than {MAX_NESTING} levels deep", err.problem_mark
        ) from None
    finally:
        loader.dispose()
    builder.doc.data = None if builder.root is _MISSING else builder.root
    return builder.doc


def node_lines(text: str, line_offset: int = 0) -> dict[Path_, int]:
    """Map every key path in a YAML document to its 1-based line number.

    `line_offset` is added so frontmatter lines match the lines of the whole file.
    """
    return load_yaml(text, line_offset).keys


def content_lines(text: str, line_offset: int = 0) -> dict[Path_, int]:
    """Map key paths of scalar values to the line where the value's text begins."""
    return load_yaml(text, line_offset).content


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
