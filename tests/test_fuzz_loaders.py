"""Property tests: the loaders either load or raise BadInputError, never anything else.

Arbitrary bytes, YAML-ish and JSON-ish text go through the prompt loaders
(`promptgen.load_prompt`), the context reader (`promptgen.load_context`), the tests-file
loader and the template renderer. Each property is bounded in examples and time so the
whole file stays under about 15 seconds.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from promptgen import Context, load_context, load_prompt, render_template
from promptgen.cli.inspect_view import inspect_data
from promptgen.errors import BadInputError
from promptgen.evaluation import check_metrics
from promptgen.formats.tests_file import load_tests_file
from promptgen.model import PromptUnderTest
from promptgen.options import Options
from promptgen.yamlpos import load_yaml

FAST = settings(  # PROMPTGEN_FUZZ_EXAMPLES=2000 for a longer hunt
    max_examples=int(os.environ.get("PROMPTGEN_FUZZ_EXAMPLES", "60")),
    deadline=2000,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
SUFFIXES = [".prompty", ".md", ".txt", ".prompt.yml", ".yml"]

YAML_CHARS = st.sampled_from(list("-:[]{},&*!|>'\"#%@`?~<=\n\t ") + list("abcxyz019._\\"))
yamlish = st.text(YAML_CHARS, max_size=200)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=20,
)
FRONT_KEYS = st.sampled_from(
    ["name", "inputs", "sample", "scenarios", "testSamples", "metadata", "model", "template",
     "checks", "tags", "instructions", "outputs", "tools", "version", "effort"]
)  # fmt: skip
TEMPLATE_BITS = st.sampled_from(
    ["{{ x }}", "{% if x %}", "{% endif %}", "{% for i in range(3) %}", "{% endfor %}", "{{",
     "}}", "{%", "%}", "{#", "#}", "(", ")", "|upper", "|join(',')", "'a' * 3", "~", " ",
     "\n", "user:\n", "system:\n", "{{#s}}", "{{/s}}", "{{.}}", "x", "%", "[", "]", ".ljust(4)",
     " 10**9 ", " * ", "'{:>99999999}'", ".format(", "|center(10**8)", "range(10**5)", "s", ","]
)  # fmt: skip


@pytest.fixture(scope="module")
def folder() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as name:
        yield Path(name)


def _load(folder: Path, suffix: str, content: bytes) -> None:
    path = folder / f"fuzz{suffix}"
    path.write_bytes(content)
    try:  # what `promptgen inspect` does
        prompt = load_prompt(path)
        check_metrics(prompt, Options())
        json.dumps(inspect_data(prompt), default=str)
    except BadInputError as err:
        assert "\n" not in err.one_line()
        return
    assert isinstance(prompt, PromptUnderTest)
    Context.new(prompt).to_json()  # what loads can also be saved


@FAST
@given(suffix=st.sampled_from(SUFFIXES), content=st.binary(max_size=300))
def test_arbitrary_bytes(folder: Path, suffix: str, content: bytes) -> None:
    _load(folder, suffix, content)


@FAST
@given(suffix=st.sampled_from(SUFFIXES[:3]), front=yamlish, body=st.text(max_size=80))
def test_yamlish_frontmatter(folder: Path, suffix: str, front: str, body: str) -> None:
    _load(folder, suffix, f"---\n{front}\n---\n{body}".encode())


@FAST
@given(data=st.dictionaries(FRONT_KEYS, json_values, max_size=5), body=st.lists(TEMPLATE_BITS))
def test_frontmatter_of_wrong_types(folder: Path, data: dict[str, Any], body: list[str]) -> None:
    front = json.dumps(data)  # JSON is YAML: every key with a value of any type
    _load(folder, ".prompty", f"---\n{front}\n---\n{''.join(body)}".encode())


@FAST
@given(doc=yamlish)
def test_yamlish_prompt_yml(folder: Path, doc: str) -> None:
    _load(folder, ".prompt.yml", f"messages:\n  - role: user\n    content: hi\n{doc}".encode())


YML_KEYS = st.sampled_from(
    ["messages", "testData", "evaluators", "modelParameters", "jsonSchema", "responseFormat",
     "model", "name"]
)  # fmt: skip


@FAST
@given(data=st.dictionaries(YML_KEYS, json_values, max_size=5))
def test_prompt_yml_of_wrong_types(folder: Path, data: dict[str, Any]) -> None:
    _load(folder, ".prompt.yml", json.dumps(data).encode())


def _context_text() -> str:
    prompt = PromptUnderTest(name="p", messages=[])
    return Context.new(prompt).to_json()


BASE_CONTEXT = json.loads(_context_text())


@st.composite
def contexts(draw: st.DrawFn) -> bytes:
    data = json.loads(json.dumps(BASE_CONTEXT))
    section = draw(st.sampled_from(["options", "prompt", "tests", "rules", "version", "top"]))
    value = draw(json_values)
    if section == "top":
        data[draw(st.text(max_size=6))] = value
    elif isinstance(data.get(section), dict) and draw(st.booleans()):
        data[section][draw(st.text(max_size=8))] = value
    else:
        data[section] = value
    text = json.dumps(data)
    cut = draw(st.integers(0, len(text)))
    return (text if draw(st.booleans()) else text[:cut]).encode()


@FAST
@given(content=st.one_of(contexts(), st.binary(max_size=200)))
def test_context_reader(folder: Path, content: bytes) -> None:
    path = folder / "context.json"
    path.write_bytes(content)
    try:
        ctx = load_context(path)
    except BadInputError:
        return
    ctx.to_json()


TEST_KEYS = st.sampled_from(["id", "inputs", "rule_id", "origin", "tests", "rules"])


@FAST
@given(data=st.one_of(json_values, st.lists(st.dictionaries(TEST_KEYS, json_values))))
def test_tests_file_loader(folder: Path, data: Any) -> None:
    path = folder / "tests.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    try:
        tests, rules = load_tests_file(path)
    except BadInputError:
        return
    assert isinstance(tests, list) and isinstance(rules, list)


@FAST
@given(bits=st.lists(TEMPLATE_BITS, max_size=30), engine=st.sampled_from(["jinja2", "mustache"]))
def test_templates_render_or_fail_clearly(bits: list[str], engine: str) -> None:
    try:
        out = render_template("".join(bits), {"x": "v", "s": [1, 2]}, engine=engine)
    except BadInputError:
        return
    assert isinstance(out, str)


def _plain(value: Any) -> bool:
    """JSON-like data without cycles (what load_yaml promises to give like safe_load)."""
    stack, seen = [value], 0
    while stack:
        item = stack.pop()
        seen += 1
        if seen > 10_000 or isinstance(item, (bytes, set, tuple)):
            return False
        if isinstance(item, dict):
            stack.extend([*item.keys(), *item.values()])
        elif isinstance(item, list):
            stack.extend(item)
    return True


YAML_TOKENS = st.sampled_from(
    ["a", "b", "k1", "1", "-2", "0x1F", "1.5", ".nan", ".inf", "~", "null", "yes", "true",
     "2024-01-01", "'q'", '"d\\u00e9"', ": ", "- ", "\n", "\n  ", "\n    ", "[", "]", "{",
     "}", ", ", "&x ", "*x", "&y ", "*y", "<<: ", "? ", "!!str ", "!!int ", "| ", "> ", "#c",
     "---\n", "...\n"]
)  # fmt: skip


@FAST
@given(tokens=st.lists(YAML_TOKENS, max_size=40))
def test_yaml_builder_agrees_with_the_yaml_library(tokens: list[str]) -> None:
    """load_yaml gives what libyaml + SafeConstructor give, or refuses what is not data."""
    text = "".join(tokens)
    error = object()
    try:
        expected = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except Exception:  # the library's own constructors raise IndexError, KeyError, ...
        expected = error
    try:
        got = load_yaml(text).data
    except yaml.YAMLError:
        got = error
    if expected is error or not _plain(expected):
        assert got is error  # bad YAML, non-JSON types and cycles are refused
    else:
        assert got == expected or repr(got) == repr(expected)
