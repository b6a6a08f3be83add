"""Frontmatter split and read, and the Prompty role-marker parser, shared by the loaders."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import yaml

from promptgen.errors import PromptFormatError
from promptgen.model import ROLES, Message
from promptgen.yamlpos import Path_, YamlLimitError, load_yaml, yaml_error_line, yaml_error_text

_ROLE_NAMES = "|".join(ROLES)
_MARKER = re.compile(
    rf"^\s*#?\s*(?P<role>{_ROLE_NAMES})(?:\[(?P<attrs>[^\]]*)\])?\s*:\s*$", re.IGNORECASE
)
# `name[key=value]:` alone on a line is unmistakably meant as a role marker
# (`items[0]:` in prose is not: it has no `key=value`).
_ATTR_MARKER = re.compile(r"^\s*#?\s*(?P<role>[A-Za-z_][\w-]*)\[(?P<attrs>[^\]]*=[^\]]*)\]\s*:\s*$")
_FENCE = re.compile(r"^\s*---\s*$")
_ATTR = re.compile(r"""\s*([A-Za-z_][\w-]*)\s*=\s*("(?:[^"\\]|\\.)*"|'[^']*'|[^,]*)\s*(?:,|$)""")


@dataclass
class SplitFile:
    frontmatter: str | None
    body: str
    body_line: int  # 1-based line of the file where the body starts
    frontmatter_line: int = 2  # 1-based line of the first frontmatter line


def read_frontmatter(
    text: str | None, first_line: int, file: str, what: str = "frontmatter"
) -> tuple[dict[str, Any], dict[Path_, int]]:
    """The YAML of a frontmatter (`what` names it in errors) as a mapping, and the line of
    each key; an error with its line for bad YAML, a document over promptgen's limits or
    anything but a mapping."""
    if text is None:
        return {}, {}
    offset = first_line - 1
    try:
        doc = load_yaml(text, offset)
    except YamlLimitError as err:
        raise PromptFormatError(
            f"{what}: {yaml_error_text(err)}",
            file=file,
            line=yaml_error_line(err, offset),
            hint="see the limits in docs/formats.md",
        ) from err
    except yaml.YAMLError as err:
        raise PromptFormatError(
            f"invalid {what} YAML: {yaml_error_text(err)}",
            file=file,
            line=yaml_error_line(err, offset),
            hint="fix the YAML between the '---' lines",
        ) from err
    raw = doc.data
    if raw is None:
        return {}, {}
    if not isinstance(raw, dict):
        raise PromptFormatError(
            f"{what} must be a YAML mapping of 'key: value' lines",
            file=file,
            line=first_line,
            hint="see docs/formats.md",
        )
    return raw, doc.keys


def split_frontmatter(text: str, file: str, *, require_close: bool = True) -> SplitFile:
    """Split `---`-fenced YAML frontmatter from the body."""
    lines = text.splitlines(keepends=True)
    first = next((i for i, ln in enumerate(lines) if ln.strip()), None)
    if first is None or not _FENCE.match(lines[first]):
        return SplitFile(None, text, 1)
    for end in range(first + 1, len(lines)):
        if _FENCE.match(lines[end]):
            front = "".join(lines[first + 1 : end])
            return SplitFile(front, "".join(lines[end + 1 :]), end + 2, first + 2)
    if require_close:
        raise PromptFormatError(
            "frontmatter starts with '---' but has no closing '---' line",
            file=file,
            line=first + 1,
            hint="add a line with just '---' after the YAML",
        )
    return SplitFile(None, text, 1)


def _coerce(raw: str) -> Any:
    raw = raw.strip()
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "\"'":
        return raw[1:-1].replace('\\"', '"')
    if re.fullmatch(r"[+-]?\d+", raw):
        return int(raw)
    if re.fullmatch(r"[+-]?(\d+\.\d*|\.\d+)([eE][+-]?\d+)?", raw):
        return float(raw)
    if raw.lower() in ("true", "false"):
        return raw.lower() == "true"
    return raw


def parse_attributes(text: str | None, file: str, line: int) -> dict[str, Any]:
    if not text or not text.strip():
        return {}
    attrs: dict[str, Any] = {}
    pos = 0
    while pos < len(text):
        match = _ATTR.match(text, pos)
        if not match or match.end() == pos:
            raise PromptFormatError(
                f"cannot read role attributes '[{text}]'",
                file=file,
                line=line,
                hint='write them as role[key="value", other=1]:',
            )
        attrs[match.group(1)] = _coerce(match.group(2))
        pos = match.end()
    return attrs


def _trim(lines: list[str]) -> str:
    return "".join(lines).strip("\r\n")


def parse_messages(body: str, file: str, body_line: int = 1) -> list[Message]:
    """Split a body into messages on role-marker lines.

    A marker is a line holding only `role:` or `role[k="v"]:` (case-insensitive, an
    optional leading `#`). Text before the first marker is a system message.
    Leading and trailing newlines of each message are trimmed; other whitespace stays.
    """
    messages: list[Message] = []
    attrs: dict[str, Any] = {}
    role, start = "system", body_line
    chunk: list[str] = []
    seen_marker = False

    def flush() -> None:
        raw = "".join(chunk)
        content = _trim(chunk)
        if seen_marker or content.strip():
            skipped = raw[: len(raw) - len(raw.lstrip("\r\n"))].count("\n")
            messages.append(
                Message(role=role, content=content, attributes=attrs, line=start + skipped)
            )

    for offset, line in enumerate(body.splitlines(keepends=True)):
        number = body_line + offset
        match = _MARKER.match(line)
        if match is None:
            bad = _ATTR_MARKER.match(line)
            if bad is not None:
                raise PromptFormatError(
                    f"unknown role '{bad.group('role')}'",
                    file=file,
                    line=number,
                    hint=f"use one of {', '.join(ROLES)}",
                )
            chunk.append(line)
            continue
        flush()
        seen_marker = True
        role = match.group("role").lower()
        attrs = parse_attributes(match.group("attrs"), file, number)
        start, chunk = number + 1, []
    flush()
    return messages
