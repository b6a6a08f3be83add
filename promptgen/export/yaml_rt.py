"""Round trips of YAML files with ruamel.yaml: comments, key order, quoting and (as
closely as one indentation style allows) layout kept; atomic writes."""

from __future__ import annotations

import io
import os
import re
import stat
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import YAMLError
from ruamel.yaml.scalarstring import LiteralScalarString

from promptgen.errors import BadInputError

# Indentation styles tried on an author's file: (mapping, sequence, dash offset).
STYLES = ((2, 4, 2), (2, 2, 0), (4, 6, 4), (4, 4, 2), (4, 4, 0), (2, 6, 4))
NEW_STYLE = STYLES[0]


def commented(node: Any) -> Any:
    if isinstance(node, Mapping):
        return CommentedMap((str(k), commented(v)) for k, v in node.items())
    if isinstance(node, list):
        return CommentedSeq(commented(v) for v in node)
    if isinstance(node, str):
        return block(node)
    return node


def read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as err:
        raise BadInputError(
            f"cannot read {path}: {err.strerror}", hint="check the file's permissions"
        ) from err


def load_document(path: Path, data: bytes) -> tuple[CommentedMap, tuple[int, int, int]]:
    """The file as a round-trip document, and the indentation style that writes it back
    closest to how it was written."""
    try:
        text = data.decode("utf-8-sig").replace("\r\n", "\n")
        doc = rt_yaml(NEW_STYLE).load(text)
    except (UnicodeDecodeError, YAMLError) as err:
        raise BadInputError(
            f"cannot read it as YAML: {str(err).splitlines()[0]}",
            file=path,
            hint="fix the file, or export from a run whose prompt file is valid",
        ) from err
    if not isinstance(doc, CommentedMap) or "messages" not in doc:
        raise BadInputError(
            "not a GitHub Models prompt: no 'messages' list",
            file=path,
            hint="remove the stale file from the export folder",
        )
    return doc, closest_style(doc, text)


def closest_style(doc: CommentedMap, text: str) -> tuple[int, int, int]:
    want = text.splitlines()
    best, best_diff = NEW_STYLE, None
    for style in STYLES:
        got = dump(doc, rt_yaml(style)).splitlines()
        diff = sum(a != b for a, b in zip(want, got, strict=False)) + abs(len(want) - len(got))
        if best_diff is None or diff < best_diff:
            best, best_diff = style, diff
        if diff == 0:
            break
    return best


def rt_yaml(style: tuple[int, int, int]) -> YAML:
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = 4096  # never re-wrap the author's lines
    mapping, sequence, offset = style
    yaml.indent(mapping=mapping, sequence=sequence, offset=offset)
    return yaml


def dump(doc: CommentedMap, yaml: YAML) -> str:
    buffer = io.StringIO()
    yaml.dump(doc, buffer)
    return buffer.getvalue()


_TRAILING_SPACE = re.compile(r"[ \t]$", re.MULTILINE)


def block(text: str) -> str:
    """Multi-line text as a literal block (`|`) when that keeps it exactly."""
    literal_safe = (
        "\n" in text
        and not text[:1].isspace()
        and not _TRAILING_SPACE.search(text)
        and all(c.isprintable() or c in "\n\t" for c in text)
    )
    return LiteralScalarString(text) if literal_safe else text


def write_atomic(path: Path, data: bytes) -> None:
    """Write through a temporary file in the same folder, then rename over `path`."""
    tmp: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        mode = stat.S_IMODE(path.stat().st_mode) if path.is_file() else None
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
        tmp = None
    except OSError as err:
        raise BadInputError(
            f"cannot write {path}: {err.strerror}", hint="choose a folder you can write to"
        ) from err
    finally:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
