"""The test samples of a Promptarchitect prompt: the files in its `test_path` folder.

Which files are samples: the regular files directly in that folder (not in subfolders)
whose name ends in `.md`, `.markdown` or `.txt` (any case), except hidden ones (a name
starting with `.`) and the prompt file itself; in file-name order; at most
MAX_SAMPLE_FILES. Each one is optional YAML frontmatter, whose properties fill the
prompt's placeholders, and a body: the value of `input`, with surrounding blank lines
and spaces trimmed (as the frontmatter library Promptarchitect uses does).
"""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

from promptgen.bounds import MAX_DATA_FILE_BYTES, printable
from promptgen.errors import PromptFormatError
from promptgen.formats.body import read_frontmatter, split_frontmatter
from promptgen.formats.pa_tests import Where
from promptgen.jsonio import read_limited
from promptgen.model import TestSample

SAMPLE_SUFFIXES = (".md", ".markdown", ".txt")
MAX_SAMPLE_FILES = 10_000
INPUT = "input"


def sample_files(prompt_file: Path, folder: Path) -> list[Path]:
    """The sample files of `folder`, in name order (see the module docstring)."""
    root = prompt_file.parent.resolve()
    own = prompt_file.resolve()
    found = []
    for entry in folder.iterdir():
        name = entry.name
        if name.startswith(".") or not name.lower().endswith(SAMPLE_SUFFIXES):
            continue
        target = entry.resolve()
        # A link out of the prompt's folder is not read, like any reference out of it.
        if target == own or root not in target.parents or not target.is_file():
            continue
        found.append(entry)
        if len(found) > MAX_SAMPLE_FILES:
            break
    return sorted(found, key=lambda p: p.name)


def read_samples(prompt_file: Path, relative: str, where: Where) -> list[TestSample]:
    """The samples of `test_path` (relative to the prompt, inside its folder)."""
    root = prompt_file.parent.resolve()
    if "\x00" in relative:
        raise where.error("test_path contains a NUL byte", "test_path", hint="fix the path")
    folder = (root / relative).resolve()
    if folder != root and root not in folder.parents:
        raise where.error(
            f"test_path '{printable(relative)}' is outside the prompt's folder",
            "test_path",
            hint="move the samples next to the prompt or into a subfolder",
        )
    try:
        found = folder.is_dir()
    except OSError as err:  # a name too long for the filesystem, a path it cannot read
        raise where.error(
            f"test_path '{printable(relative)}' cannot be read: {err.strerror}",
            "test_path",
            hint="fix the path; it is relative to the prompt file",
        ) from None
    if not found:
        raise where.error(
            f"test_path folder '{printable(relative)}' not found (looked for {printable(folder)})",
            "test_path",
            hint="fix the path; it is relative to the prompt file",
        )
    files = sample_files(prompt_file, folder)
    if len(files) > MAX_SAMPLE_FILES:
        raise where.error(
            f"test_path folder '{printable(relative)}' holds more than "
            f"{MAX_SAMPLE_FILES:,} sample files",
            "test_path",
            hint="keep the most useful samples",
        )
    if not files:
        where.warn(
            f"test_path folder '{printable(relative)}' holds no sample files "
            f"({', '.join(SAMPLE_SUFFIXES)})",
            "test_path",
        )
    return [read_sample(p, root, where) for p in files]


def read_sample(path: Path, root: Path, where: Where) -> TestSample:
    """One sample file: its frontmatter's properties, and its body as `input`."""
    file = str(path)
    data = read_limited(path, MAX_DATA_FILE_BYTES, "test sample", PromptFormatError)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise PromptFormatError(
            "test sample is not valid UTF-8 text", file=file, line=line, hint="save it as UTF-8"
        ) from err
    split = split_frontmatter(text, file, require_close=False)
    properties = _properties(split.frontmatter, split.frontmatter_line, file)
    if INPUT in properties:
        where.warnings.append(
            f"{file}: property '{INPUT}' is not used: the body of a sample is its input"
        )
    inputs = {k: v for k, v in properties.items() if k != INPUT}
    inputs[INPUT] = split.body.strip()
    source = path.resolve().relative_to(root).as_posix()
    return TestSample(inputs=inputs, source=source)


def _properties(text: str | None, first_line: int, file: str) -> dict[str, Any]:
    data, _ = read_frontmatter(text, first_line, file, "test sample frontmatter")
    if not all(isinstance(k, str) for k in data):
        raise PromptFormatError(
            "test sample frontmatter must be a mapping of property names to values",
            file=file,
            line=first_line,
            hint="write 'name: value' lines between the '---' lines",
        )
    return {k: _plain(v) for k, v in data.items()}


def _plain(value: Any) -> Any:
    """JSON-like data: a YAML date becomes its ISO text (test ids hash the values)."""
    if isinstance(value, datetime.date):
        return value.isoformat()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value
