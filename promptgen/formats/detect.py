"""Which format a file is in, from its name and its content; never a silent guess.

A suffix that belongs to one format decides (`.prompty`, `.prompt.yml`,
`.verdict.md`); a shared suffix (`.prompt`, `.json`, `.md`, `.txt`) is decided by
content. A file whose content fits two formats, or a JSON file that is neither a
saved context nor an LVE test, is an error naming the formats considered; `--format`
settles it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Literal, TypeGuard

from promptgen.errors import BadInputError, PromptFormatError
from promptgen.jsonio import read_json
from promptgen.kinds import FORMATS
from promptgen.model import PromptUnderTest

CONTEXT = "context"

_ROLE_MARKER = re.compile(
    r"(?im)^\s*#?\s*(system|user|assistant|developer|function|tools?)(\[[^\]\n]*\])?\s*:\s*$"
)
_SECTION = re.compile(r"(?m)^\s*@(system|user|no_format)\b")
_PA_KEYS = re.compile(
    r"(?m)^(provider|test_path|system_role|output_format|prompt_version|date_created)\s*:"
)
_PA_TEST = re.compile(r"(?m)^tests\s*:\s*$(?:\n(?:[ \t]+.*|\s*))*?\n[ \t]+type\s*:")


def _frontmatter(text: str) -> str | None:
    """The text of a leading `---` block, or None."""
    lines = text.lstrip("\ufeff").splitlines()
    if not lines or lines[0].strip() != "---":
        return None
    for i, line in enumerate(lines[1:], start=1):
        if line.strip() in ("---", "..."):
            return "\n".join(lines[1:i])
    return None


def _is_lve_jsonl(text: str) -> bool:
    stripped = text.strip()
    if stripped == "<please fill in>":
        return True
    lines = [ln for ln in stripped.splitlines() if ln.strip()]
    if not lines:
        return False
    for line in lines:
        try:
            value = json.loads(line)
        except ValueError:
            return False
        if not isinstance(value, dict) or not ({"content", "role"} & value.keys()):
            return False
    return True


def _is_promptarchitect(front: str | None) -> bool:
    return front is not None and bool(_PA_KEYS.search(front) or _PA_TEST.search(front))


def json_kind(path: Path, text: str | None = None) -> str:
    """ "context" or "lve" for a .json file; JSON of any other shape is an error.

    JSON that cannot be read at all counts as a context, so the context reader reports
    what is wrong with it."""
    try:
        value = json.loads(text) if text is not None else read_json(path, "file", "")
    except (ValueError, RecursionError, BadInputError):
        return CONTEXT
    if isinstance(value, dict):
        if "checker_args" in value or {"prompt_file", "multi_run_prompt"} & set(value):
            return "lve"
        if {"stages", "prompt", "version"} & set(value):
            return CONTEXT
    raise PromptFormatError(
        "is neither a promptgen context nor an LVE test (formats considered: context.json, "
        "LVE test.json)",
        file=path,
        hint="pass a prompt file, a context.json from a run, or an LVE test.json",
    )


def candidates(path: Path, text: str) -> list[str]:
    """Every format the content of `path` fits (before the name decides)."""
    name = path.name.lower()
    front = _frontmatter(text)
    body = text if front is None else text.split("---", 2)[-1]
    found: list[str] = []
    if name.endswith(".prompt"):
        if _is_lve_jsonl(text):
            return ["lve-prompt"]
        if _is_promptarchitect(front):
            found.append("promptarchitect")
        if _SECTION.search(body):
            found.append("verdict")
        return found or ["lve-prompt"]  # LVE reads any other text as one user message
    if _is_promptarchitect(front):
        found.append("promptarchitect")
    if _SECTION.search(body):
        found.append("verdict")
    if _ROLE_MARKER.search(body) and "verdict" in found:
        found.append("markdown" if name.endswith(".md") else "text")
    return found


# Files of these kinds are not prompts: reading one as a text prompt would be a silent
# misread, so they need --format.
_NOT_PROMPTS = {
    ".py": "Python",
    ".js": "JavaScript",
    ".ts": "TypeScript",
    ".jsonl": "JSON lines",
    ".csv": "CSV",
    ".tsv": "TSV",
    ".html": "HTML",
    ".htm": "HTML",
    ".xml": "XML",
    ".toml": "TOML",
    ".ini": "INI",
    ".ipynb": "Jupyter notebook",
    ".sh": "shell script",
}


def _refuse(path: Path, kind: str) -> PromptFormatError:
    return PromptFormatError(
        f"is {kind}, not a prompt file (formats read: {', '.join(FORMATS)})",
        file=path,
        hint="pass a prompt file, or --format text to read it as a plain text prompt",
    )


def is_json_document(text: str) -> bool:
    """A JSON object or array (a bare string or number reads as plain text)."""
    stripped = text.strip()
    if not stripped or stripped[0] not in "[{":
        return False
    try:
        json.loads(stripped)
    except (ValueError, RecursionError):
        return False
    return True


def detect(path: Path, text: str) -> str:
    """The format of `path` (raises PromptFormatError when the content is ambiguous)."""
    name = path.name.lower()
    if name.endswith((".prompt.yml", ".prompt.yaml")):
        return "prompt.yml"
    if name.endswith(".prompty"):
        return "prompty"
    if name.endswith((".verdict.md", ".verdict.txt")):
        return "verdict"
    if name.endswith(".json"):
        return json_kind(path, text)
    if name.endswith((".yml", ".yaml")):
        return "prompt.yml"  # accepted only when shaped like a GitHub Models prompt
    suffix = path.suffix.lower()
    if suffix in _NOT_PROMPTS:
        if suffix == ".jsonl" and _is_lve_jsonl(text):
            return "lve-prompt"
        raise _refuse(path, f"a {_NOT_PROMPTS[suffix]} file")
    if not name.endswith(".prompt") and is_json_document(text):
        raise _refuse(path, "a JSON document")
    found = candidates(path, text)
    if len(found) > 1:
        shown = " and ".join(f"{f} ({FORMATS[f].split(' (')[0]})" for f in found)
        raise PromptFormatError(
            f"fits more than one format: {shown}",
            file=path,
            hint=f"pass --format {found[0]} or --format {found[1]}",
        )
    if found:
        return found[0]
    return "markdown" if name.endswith(".md") else "text"


def _prompty_read(fmt: str) -> TypeGuard[Literal["prompty", "markdown", "text"]]:
    """Whether prompty.load reads format `fmt`."""
    return fmt in ("prompty", "markdown", "text")


def loader(fmt: str) -> Callable[[Path, str], PromptUnderTest]:
    """The loader of format `fmt`."""
    if _prompty_read(fmt):
        from promptgen.formats import prompty

        return lambda path, text: prompty.load(path, text, fmt)
    if fmt == "prompt.yml":
        from promptgen.formats import github_models

        return github_models.load
    if fmt in ("lve", "lve-prompt"):
        from promptgen.formats import lve

        return lve.load if fmt == "lve" else lve.load_prompt_file
    if fmt == "promptarchitect":
        from promptgen.formats import promptarchitect

        return promptarchitect.load
    if fmt == "verdict":
        from promptgen.formats import verdict

        return verdict.load
    raise PromptFormatError(f"unknown format {fmt!r}", hint=f"use one of: {', '.join(FORMATS)}")
