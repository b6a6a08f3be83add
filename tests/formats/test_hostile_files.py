"""Hostile and huge prompt files: refused before reading, or loaded within seconds.

Timings are measured against generous bounds (a busy CI machine is slow); the limits
themselves are promptgen.bounds'.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from promptgen import load_prompt
from promptgen.bounds import MAX_PROMPT_BYTES
from promptgen.errors import PromptFormatError
from promptgen.formats.refs import read_data_file
from tests.test_limits import BILLION_LAUGHS

Write = Callable[[str, str | bytes], Path]


def _error(path: Path) -> PromptFormatError:
    with pytest.raises(PromptFormatError) as info:
        load_prompt(path)
    line = info.value.one_line()
    assert "\n" not in line and line.startswith(str(path))
    return info.value


def test_fifo_prompt_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "p.prompty"
    os.mkfifo(fifo)
    started = time.monotonic()
    assert "named pipe (FIFO), not a regular file" in _error(fifo).message
    assert time.monotonic() - started < 5


def test_device_behind_a_prompt_name_is_refused(tmp_path: Path) -> None:
    link = tmp_path / "zero.prompty"
    link.symlink_to("/dev/zero")
    assert _error(link).message == "prompt file is a device, not a regular file"


def test_folder_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "dir.prompty"
    folder.mkdir()
    assert _error(folder).message == "is a folder, not a prompt file"


def test_oversize_prompt_is_refused_before_reading(tmp_path: Path) -> None:
    path = tmp_path / "big.md"
    with path.open("wb") as handle:
        handle.truncate(MAX_PROMPT_BYTES + 1)  # sparse
    assert _error(path).message == "prompt file is 20 MB, over the 20 MB limit"


def test_billion_laughs_frontmatter_and_prompt_yml(write: Write) -> None:
    front = write(
        "p.prompty",
        "---\nname: x\nmetadata:\n  " + BILLION_LAUGHS.replace("\n", "\n  ") + "\n---\nhi\n",
    )
    err = _error(front)
    assert err.line == 9 and "aliases expand to more than 100,000 values" in err.message
    yml = write("p.prompt.yml", "messages: [{role: user, content: x}]\n" + BILLION_LAUGHS + "\n")
    assert _error(yml).line == 7


def test_deep_and_recursive_yaml(write: Write) -> None:
    deep = write("d.prompty", "---\nname: " + "[" * 100_000 + "]" * 100_000 + "\n---\nhi\n")
    err = _error(deep)
    assert err.line == 2 and "nested more than 64 levels deep" in err.message
    loop = write("l.prompty", "---\nname: x\nmetadata: &m {self: *m}\n---\nhi\n")
    assert "refers to its own parent" in _error(loop).message


WRONG_TYPES = [
    ("metadata-tags-number", "metadata: {tags: 42}", 3,
     "'metadata.tags' should be a list of strings, got a number"),
    ("tags-nested-list", "tags: [[1]]", 3, "'tags.0' should be a string, got a list"),
    ("metadata-tags-nested", "metadata: {tags: [[1]]}", 3,
     "'metadata.tags.0' should be a string, got a list"),
    ("temperature-date", "model:\n  parameters:\n    temperature: 2024-01-01", 5,
     "'model.parameters.temperature' should be a number, got a date"),
    ("v2-option-date", "model:\n  options:\n    maxOutputTokens: 2024-01-01", 5,
     "'model.options.maxOutputTokens' should be a whole number, got a date"),
    ("stop-number", "model:\n  parameters:\n    stop: 5", 5,
     "'model.parameters.stop' should be a string or a list of strings"),
    ("huge-int", "seed: " + "9" * 5001, 3, "a number with more than 4,300 digits"),
    ("binary-tag", "name: !!binary aGVsbG8=", 3, "unsupported YAML tag"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("front", "line", "text"), [pytest.param(*c[1:], id=c[0]) for c in WRONG_TYPES]
)
def test_wrong_types_are_one_line_with_file_and_line(
    write: Write, front: str, line: int, text: str
) -> None:
    err = _error(write("p.prompty", f"---\nname: x\n{front}\n---\nhi {{{{a}}}}\n"))
    assert err.line == line and text in err.message


def test_numbers_as_text_stay_accepted(write: Write) -> None:
    """`${env:...}` gives text: a parameter that reads as a number is fine."""
    prompt = load_prompt(
        write("p.prompty", "---\nmodel:\n  parameters:\n    temperature: '0.5'\n---\nhi\n")
    )
    assert prompt.model.parameters["temperature"] == "0.5"


def test_yml_temperature_date(write: Write) -> None:
    path = write(
        "p.prompt.yml",
        "messages: [{role: user, content: x}]\nmodelParameters:\n  temperature: 2024-01-01\n",
    )
    err = _error(path)
    assert err.line == 3
    assert err.message == (
        "prompt.yml: 'modelParameters.temperature' should be a number, got a date"
    )


def test_nul_byte_in_file_reference(write: Write) -> None:
    err = _error(write("p.prompty", '---\nsample: "${file:a\\0b.json}"\n---\nhi\n'))
    assert err.line == 2 and "contains a NUL byte" in err.message


def test_referenced_fifo_and_folder_are_refused(tmp_path: Path, write: Write) -> None:
    os.mkfifo(tmp_path / "rows.jsonl")
    (tmp_path / "sub").mkdir()
    err = _error(write("p.prompty", "---\ntestSamples: [rows.jsonl]\n---\nhi {{a}}\n"))
    assert err.line == 2 and err.message == "testSamples file 'rows.jsonl' is not a regular file"
    err = _error(write("q.prompty", "---\ndescription: ${file:sub}\n---\nhi\n"))
    assert "not found" in err.message


def test_referenced_data_is_checked_like_any_json(tmp_path: Path) -> None:
    bad = tmp_path / "s.json"
    bad.write_text('[{"a": "\\udc00"}]', encoding="utf-8")
    with pytest.raises(PromptFormatError, match=r"lone surrogate .* at \[0\]\.a") as info:
        read_data_file(bad, "p.prompty", 4)
    assert info.value.one_line().startswith("p.prompty:4: ")
    deep = tmp_path / "d.jsonl"
    deep.write_text('{"a": 1}\n' + "[" * 5000 + "]" * 5000 + "\n", encoding="utf-8")
    with pytest.raises(PromptFormatError, match=r"'d\.jsonl' line 2 nests"):
        read_data_file(deep, "p.prompty", 4)


# --- huge but legal, or refused: never more than a few seconds --------------------------


def _timed(action: Callable[[], object]) -> float:
    started = time.monotonic()
    action()
    return time.monotonic() - started


def test_twenty_megabyte_body_loads_and_renders(write: Write) -> None:
    line = "The quick brown fox jumps over the lazy dog and keeps on running.\n"
    body = line * ((MAX_PROMPT_BYTES - 200) // len(line)) + "{{ topic }}\n"
    path = write("big.md", "---\nname: big\n---\n" + body)
    loaded: list[object] = []
    assert _timed(lambda: loaded.append(load_prompt(path))) < 30
    from promptgen import render_messages

    messages = render_messages(loaded[0], {"topic": "foxes"})  # type: ignore[arg-type]
    assert len(messages[0]["content"]) == len(body) - len("{{ topic }}\n") + len("foxes")


def test_million_test_data_rows_are_refused_quickly(write: Write) -> None:
    rows = "".join(f"  - {{a: {i}}}\n" for i in range(1_000_000))
    path = write("p.prompt.yml", "messages: [{role: user, content: '{{a}}'}]\ntestData:\n" + rows)
    errors: list[PromptFormatError] = []
    assert _timed(lambda: errors.append(_error(path))) < 30
    assert "more than 1,000,000 values in one YAML document" in errors[0].message


def test_many_scenarios_are_refused_and_some_are_fine(write: Write) -> None:
    rows = "".join(f"  - name: s{i}\n" for i in range(200_000))
    path = write("p.prompty", "---\nscenarios:\n" + rows + "---\nhi {{a}}\n")
    errors: list[PromptFormatError] = []
    assert _timed(lambda: errors.append(_error(path))) < 30
    assert errors[0].line == 2
    assert errors[0].message == (
        "'scenarios' lists 200,000 scenarios; promptgen takes at most 10,000"
    )
    rows = "".join(f"  - name: s{i}\n" for i in range(5_000))
    assert (
        len(load_prompt(write("q.prompty", "---\nscenarios:\n" + rows + "---\nhi\n")).scenarios)
        == 5_000
    )


def test_too_many_sample_rows_in_a_file(tmp_path: Path, write: Write) -> None:
    rows = "".join(json.dumps({"a": i}) + "\n" for i in range(100_001))
    (tmp_path / "rows.jsonl").write_text(rows, encoding="utf-8")
    err = _error(write("p.prompty", "---\ntestSamples: [rows.jsonl]\n---\nhi {{a}}\n"))
    assert err.line == 2 and "brings the samples to 100,001" in err.message
