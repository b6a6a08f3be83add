"""promptgen.bounds and the readers that apply it: files, JSON and YAML on hostile input."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
import yaml

from promptgen import bounds, yamlpos
from promptgen.bounds import (
    MAX_NESTING,
    MAX_TEMPLATE_CHARS,
    Budget,
    dotted,
    field_size,
    joined_size,
    measure,
    percent_size,
    too_deep,
)
from promptgen.errors import BadInputError, TemplateSecurityError
from promptgen.jsonio import parse_json, read_json, read_limited
from promptgen.yamlpos import YamlLimitError, load_yaml

BILLION_LAUGHS = "\n".join(
    [
        'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]',
        *(
            f"{c}: &{c} [{','.join(['*' + p] * 9)}]"
            for p, c in zip("abcdefgh", "bcdefghi", strict=True)
        ),
    ]
)


# --- files ---------------------------------------------------------------------------


def test_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    started = time.monotonic()
    with pytest.raises(BadInputError, match=r"named pipe \(FIFO\), not a regular file"):
        read_limited(fifo, 100, "data file")
    assert time.monotonic() - started < 5  # a blocking open would hang forever


def test_device_is_refused() -> None:
    with pytest.raises(BadInputError, match="is a device, not a regular file"):
        read_limited(Path("/dev/zero"), 100, "data file")


def test_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(BadInputError, match="is a folder, not a regular file"):
        read_limited(tmp_path, 100, "data file")


def test_oversize_file_is_refused_before_reading(tmp_path: Path) -> None:
    sparse = tmp_path / "huge.json"
    with sparse.open("wb") as handle:
        handle.truncate(bounds.MAX_JSON_FILE_BYTES + 1)  # sparse: no disk used
    with pytest.raises(BadInputError) as info:
        read_json(sparse, "context file", "hint")
    assert info.value.message == "context file is 256 MB, over the 256 MB limit"


def test_file_at_the_limit_is_read(tmp_path: Path) -> None:
    path = tmp_path / "ok.txt"
    path.write_bytes(b"x" * 100)
    assert read_limited(path, 100, "data file") == b"x" * 100
    with pytest.raises(BadInputError, match="is 101 bytes, over the 100 bytes limit"):
        path.write_bytes(b"x" * 101)
        read_limited(path, 100, "data file")


def test_nul_byte_in_a_path_is_one_error() -> None:
    with pytest.raises(BadInputError, match="contains a NUL byte"):
        read_limited(Path("a\x00b"), 100, "data file")


def test_errors_can_be_reported_at_the_reference(tmp_path: Path) -> None:
    with pytest.raises(BadInputError) as info:
        read_limited(tmp_path / "gone.json", 10, "data file", report_as="p.prompty", line=4)
    assert info.value.one_line().startswith("p.prompty:4: data file '")


# --- JSON ----------------------------------------------------------------------------


def _json(text: str) -> object:
    return parse_json(text, what="data", file="d.json", hint="fix it")


def test_deep_json_is_refused_with_its_path() -> None:
    with pytest.raises(BadInputError, match=f"more than {MAX_NESTING} levels deep"):
        _json("[" * 100_000 + "]" * 100_000)  # past Python's own recursion limit
    with pytest.raises(BadInputError, match=r"at \[0\]\[0\]"):
        _json("[" * (MAX_NESTING + 1) + "]" * (MAX_NESTING + 1))
    assert _json("[" * MAX_NESTING + "]" * MAX_NESTING) is not None


def test_lone_surrogate_is_refused_with_line_but_pairs_are_fine() -> None:
    with pytest.raises(BadInputError) as info:
        _json('{\n  "a": "ok",\n  "b": "x\\ud800"\n}')
    assert info.value.line == 3 and "lone surrogate" in info.value.message
    assert "at b" in info.value.message
    assert _json('"\\ud83d\\ude00"') == "\U0001f600"


def test_huge_number_is_refused() -> None:
    with pytest.raises(BadInputError, match="more than 4,300 digits"):
        _json("9" * 5001)


def test_bad_json_keeps_its_line() -> None:
    with pytest.raises(BadInputError) as info:
        _json('{\n  "a": }')
    assert info.value.line == 2 and info.value.message.startswith("not valid JSON")


def test_too_deep_and_dotted() -> None:
    assert too_deep({"a": [[1]]}, 3) is None
    assert too_deep({"a": [[[1]]]}, 3) == ("a", 0, 0)
    assert too_deep("text") is None
    assert dotted(("tests", 3, "inputs")) == "tests[3].inputs"
    assert len(dotted(tuple(range(200)))) <= 80


# --- YAML ----------------------------------------------------------------------------

SAME_AS_SAFE_LOAD = [
    "a: 1\nb: [1, 2, {c: d}]\ne: |\n  text\n  more\nf: 2024-01-01\ng: ~\nh: yes\ni: 1.5\n",
    "base: &b {x: 1, y: 2}\nd:\n  <<: *b\n  y: 3\nl: [*b, *b]\n",
    "m:\n  <<: [{a: 1}, {a: 2, b: 2}]\n  c: 3\n",
    "- a\n- b\n",
    "x",
    "a: !!str 12\nb: !!int '7'\nc: !!float 1\n",
    "{a: 1, a: 2}",
    "k: 0x1F\nl: 0o17\nm: .inf\nn: 1_000\n",
    "t: 2001-12-14t21:59:43.10-05:00\n",
    "",
]


@pytest.mark.parametrize("text", SAME_AS_SAFE_LOAD)
def test_yaml_values_are_those_of_safe_load(text: str) -> None:
    assert load_yaml(text).data == yaml.safe_load(text)


def test_yaml_lines_of_keys_and_values() -> None:
    doc = load_yaml("name: x\nscenarios:\n  - name: a\n    text: |\n      hi\n", 1)
    assert doc.keys[("scenarios",)] == 3
    assert doc.keys[("scenarios", 0, "name")] == 4
    assert doc.content[("scenarios", 0, "text")] == 6  # a block scalar starts a line later


LIMITS = [
    (BILLION_LAUGHS, "aliases expand to more than 100,000 values", 6),
    ("[" * 1_000_000 + "]" * 1_000_000, "nested more than 64 levels deep", 1),
    ("- " * 1_000_000 + "x", "nested more than 64 levels deep", 1),
    ("a: &x [*x]\n", "refers to its own parent", 1),
    ("a: " + "9" * 5001 + "\n", "more than 4,300 digits", 1),
    ("a: &x 1\nb: [" + ", ".join(["*x"] * 1001) + "]\n", "more than 1,000 aliases", 2),
]


@pytest.mark.parametrize(("text", "message", "line"), LIMITS)
def test_yaml_limits_are_refused_quickly_with_a_line(text: str, message: str, line: int) -> None:
    started = time.monotonic()
    with pytest.raises(YamlLimitError) as info:
        load_yaml(text)
    assert message in str(info.value.problem)
    assert info.value.problem_mark.line + 1 == line
    assert time.monotonic() - started < 5


def test_yaml_values_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    # The real limit (1,000,000) is reached by tests/formats/test_hostile_files.py.
    monkeypatch.setattr(yamlpos, "MAX_YAML_VALUES", 1_000)
    assert len(load_yaml("".join(f"- {i}\n" for i in range(999))).data) == 999
    with pytest.raises(YamlLimitError, match="more than 1,000 values") as info:
        load_yaml("".join(f"- {i}\n" for i in range(1_005)))
    assert info.value.problem_mark.line + 1 == 1_000  # the list counts as one value


@pytest.mark.parametrize("text", ["a: !!binary aGVsbG8=", "a: !!set {x, y}", "a: !custom x"])
def test_yaml_tags_of_non_json_types_are_refused(text: str) -> None:
    with pytest.raises(yaml.YAMLError, match="unsupported YAML tag"):
        load_yaml(text)


def test_yaml_two_documents_and_undefined_alias_are_yaml_errors() -> None:
    with pytest.raises(yaml.YAMLError, match="expected a single document"):
        load_yaml("a: 1\n---\nb: 2\n")
    with pytest.raises(yaml.YAMLError, match="undefined alias"):
        load_yaml("a: *nope\n")


# --- template sizes ------------------------------------------------------------------


def test_measure_bounds_text_without_building_it() -> None:
    assert measure("abc") == 3
    assert measure(["ab", 1]) >= len(str(["ab", 1]))
    assert measure({"k": [1.5, None, True]}) >= len(str({"k": [1.5, None, True]}))
    assert measure(10**4000) >= 4001
    huge = ["x" * 100_000] * 1_000_000  # 10^11 characters of text, never built
    started = time.monotonic()
    assert measure(huge) > MAX_TEMPLATE_CHARS
    assert time.monotonic() - started < 1


def test_format_sizes() -> None:
    assert field_size(1, ">999999999") == 999_999_999
    assert field_size("ab", "") >= 2
    assert field_size(1.0, ".5f") >= len(format(1.0, ".5f"))
    assert percent_size("%999999999d", 1) >= 999_999_999
    assert percent_size("%*d", (50, 1)) >= 50
    assert percent_size("%(a)s%(a)s", {"a": "xyz"}) >= 6
    assert joined_size("--", ["a", "b", "c"]) >= len("a--b--c")


def test_budget_steps_and_sizes() -> None:
    budget = Budget()
    budget.build(MAX_TEMPLATE_CHARS)
    with pytest.raises(TemplateSecurityError, match="or more"):
        budget.build(MAX_TEMPLATE_CHARS + 1)
    with pytest.raises(TemplateSecurityError, match="items"):
        budget.items(bounds.MAX_TEMPLATE_ITEMS + 1)
    with pytest.raises(TemplateSecurityError, match="steps"):
        for _ in range(bounds.MAX_TEMPLATE_STEPS + 1):
            budget.step()
    assert budget.steps == bounds.MAX_TEMPLATE_STEPS + 1
