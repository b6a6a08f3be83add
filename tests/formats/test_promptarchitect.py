"""The Promptarchitect loader: both frontmatter shapes (its docs' and its code's), every
test type normalised, errors with their line, the system_role file, the test_path
samples, the appended `{{input}}`, and rendering."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from promptgen.errors import PromptFormatError
from promptgen.formats import load_prompt
from promptgen.formats.promptarchitect import DEFAULT_SYSTEM
from promptgen.rendering.render import render_messages
from tests.conftest import run_cli

Write = Callable[[str, str], Path]

# The shape of Promptarchitect's docs: `parameters:`, a nested `property:` with `equal`,
# and `format: text`.
DOCS = """---
provider: openai
model: gpt-4o-mini
test_path: ./tests
parameters:
  temperature: 0.7
  max_tokens: 2500
tests:
  test_01:
    type: question
    prompt: Is the poem following a haiku scheme?
  rated:
    type: score
    prompt: Rate the clarity of the output on a scale from 1 to 10.
    min: 1
    max: 10
    threshold: 7
  lines:
    type: property
    property:
      unit: lines
      equal: 3
  length:
    type: property
    property:
      unit: words
      min: 5
      max: 40
  plain:
    type: format
    format: text
  english:
    type: language
    lang_code: en
author: John Doe
date_created: 2023-10-01
description: This prompt writes a poem about a topic.
---

Write a poem about {{topic}} using the following input:

{{input}}
"""

# The shape of Promptarchitect's code: flat parameters, `unit` with `limit` or `equals`.
CODE = """---
provider: ollama
model: llama3
prompt_version: 1.1
temperature: 0.2
max_tokens: 300
top_p: 0.9
presence_penalty: 0.1
frequency_penalty: 0.2
input: input.md
output: output.json
output_format: json
system_role: roles/poet.md
test_path: samples
tests:
  paragraphs:
    type: property
    unit: paragraphs
    limit: {min: 1, max: 3}
  exact:
    type: property
    unit: sentences
    equals: 4
  grounded:
    type: metric
    metric: faithfulness
    input: {question: input, answer: output, context: source}
    limit: {min: 0.8}
  has_title:
    type: keyword
    keyword: Title
  json:
    type: format
    format: json
---
Summarise the text as JSON.
"""


@pytest.fixture
def docs_prompt(write: Write) -> Path:
    write("tests/a-sea.md", "---\ntopic: the sea\n---\n\nWaves, salt and wind.\n")
    write("tests/b-plain.txt", "\n  Only a body here.  \n\n")
    write("tests/.hidden.md", "---\ntopic: hidden\n---\nnot a sample\n")
    write("tests/notes.json", '{"not": "a sample"}')
    write("tests/deeper/c.md", "in a subfolder: not a sample\n")
    write("tests/C-upper.MARKDOWN", "---\ntopic: [a, b]\nwhen: 2024-01-02\n---\nUpper case.\n")
    return write("poem.prompt", DOCS)


def test_the_docs_shape(docs_prompt: Path) -> None:
    prompt = load_prompt(docs_prompt)
    assert (prompt.name, prompt.format, prompt.template_engine) == (
        "poem",
        "promptarchitect",
        "mustache",
    )
    assert (prompt.model.provider, prompt.model.id) == ("openai", "gpt-4o-mini")
    assert prompt.model.parameters == {"temperature": 0.7, "max_tokens": 2500}
    assert prompt.description == "This prompt writes a poem about a topic."
    facts = prompt.extra["promptarchitect"]
    assert facts["metadata"] == {
        "author": "John Doe",
        "date_created": "2023-10-01",
        "description": "This prompt writes a poem about a topic.",
    }
    assert facts["tests"] == {
        "test_01": {"type": "question", "prompt": "Is the poem following a haiku scheme?"},
        "rated": {
            "type": "score",
            "prompt": "Rate the clarity of the output on a scale from 1 to 10.",
            "min": 1,
            "max": 10,
            "threshold": 7,
        },
        "lines": {"type": "property", "unit": "lines", "min": None, "max": None, "equals": 3},
        "length": {"type": "property", "unit": "words", "min": 5, "max": 40, "equals": None},
        "plain": {"type": "format", "format": "text"},
        "english": {"type": "language", "lang_code": "en"},
    }
    assert prompt.warnings == []
    # Promptarchitect always sends a system message: promptgen's default here.
    assert [(m.role, m.content, m.line) for m in prompt.messages] == [
        ("system", DEFAULT_SYSTEM, None),
        ("user", "Write a poem about {{topic}} using the following input:\n\n{{input}}", 40),
    ]


def test_the_samples_of_test_path(docs_prompt: Path) -> None:
    prompt = load_prompt(docs_prompt)
    # .md, .markdown and .txt in name order (case counts: upper case sorts first); hidden
    # files, other suffixes and subfolders are not samples; bodies are trimmed.
    assert [(s.source, s.inputs) for s in prompt.test_samples] == [
        ("tests/C-upper.MARKDOWN",
         {"topic": ["a", "b"], "when": "2024-01-02", "input": "Upper case."}),
        ("tests/a-sea.md", {"topic": "the sea", "input": "Waves, salt and wind."}),
        ("tests/b-plain.txt", {"input": "Only a body here."}),
    ]  # fmt: skip
    assert all(s.expected is None for s in prompt.test_samples)
    inputs = {n: (i.type, i.default, i.sample, i.detected) for n, i in prompt.inputs.items()}
    assert inputs == {
        "topic": ("array", "", ["a", "b"], True),
        "input": ("string", None, "Upper case.", True),
        "when": ("string", None, "2024-01-02", False),
    }


def test_rendering_fills_placeholders_from_a_sample(docs_prompt: Path) -> None:
    prompt = load_prompt(docs_prompt)
    sea, plain = prompt.test_samples[1], prompt.test_samples[2]
    rendered = render_messages(prompt, sea.inputs)
    assert rendered[1] == {
        "role": "user",
        "content": "Write a poem about the sea using the following input:\n\nWaves, salt and wind.",
    }
    # A property the sample leaves out renders empty, as chevron renders it.
    assert render_messages(prompt, plain.inputs)[1]["content"] == (
        "Write a poem about  using the following input:\n\nOnly a body here."
    )


def test_the_code_shape(write: Write) -> None:
    write("roles/poet.md", "You are a careful editor.\n\n")
    write("samples/one.md", "---\nsource: The source text.\n---\nA text to summarise.\n")
    prompt = load_prompt(write("summary.prompt", CODE))
    assert (prompt.model.provider, prompt.model.id) == ("ollama", "llama3")
    assert prompt.model.parameters == {
        "temperature": 0.2,
        "max_tokens": 300,
        "top_p": 0.9,
        "presence_penalty": 0.1,
        "frequency_penalty": 0.2,
    }
    facts = prompt.extra["promptarchitect"]
    assert facts["metadata"] == {
        "prompt_version": "1.1",
        "input": "input.md",
        "output": "output.json",
        "output_format": "json",
    }
    assert (facts["system_role"], facts["test_path"]) == ("roles/poet.md", "samples")
    assert facts["tests"] == {
        "paragraphs": {"type": "property", "unit": "paragraphs", "min": 1, "max": 3,
                       "equals": None},
        "exact": {"type": "property", "unit": "sentences", "min": None, "max": None,
                  "equals": 4},
        "grounded": {
            "type": "metric",
            "metric": "faithfulness",
            "input": {"question": "input", "answer": "output", "context": "source"},
            "limit": {"min": 0.8, "max": None},
        },
        "has_title": {"type": "keyword", "keyword": "Title"},
        "json": {"type": "format", "format": "json"},
    }  # fmt: skip
    system, user = prompt.messages
    assert (system.content, system.line) == ("You are a careful editor.", 13)
    # No {{input}} in the body: Promptarchitect appends " {{input}}".
    assert (user.content, user.line) == ("Summarise the text as JSON. {{input}}", 36)
    # The field the faithfulness test reads is an input, so generated tests give it.
    assert {n: i.description for n, i in prompt.inputs.items()} == {
        "input": "The text the prompt works on (the body of a test sample file).",
        "source": "The source material the output must stay faithful to (read by the "
        "faithfulness test 'grounded').",
    }
    rendered = render_messages(prompt, prompt.test_samples[0].inputs)
    assert rendered == [
        {"role": "system", "content": "You are a careful editor."},
        {"role": "user", "content": "Summarise the text as JSON. A text to summarise."},
    ]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("Translate: {{ input }}", "Translate: {{ input }}"),
        ("Translate this.", "Translate this. {{input}}"),
        ("", "{{input}}"),
        ("{{#input}}Text: {{input}}{{/input}}", "{{#input}}Text: {{input}}{{/input}}"),
    ],
)
def test_input_is_appended_only_when_the_body_does_not_use_it(
    write: Write, body: str, expected: str
) -> None:
    prompt = load_prompt(write("t.prompt", f"---\nprovider: openai\nmodel: m\n---\n{body}\n"))
    assert prompt.messages[1].content == expected
    assert "input" in prompt.inputs


def test_system_role_text_and_warnings(write: Write) -> None:
    text = (
        "---\nprovider: openai\nmodel: m\nsystem_role_text: Be brief.\ntemperature: 0.5\n"
        "parameters: {temperature: 0.9, seed: 3}\nowner: me\n---\nSay hi to {{input}}\n"
    )
    path = write("greet.md", text)
    prompt = load_prompt(path)
    assert prompt.format == "promptarchitect"  # a .md with Promptarchitect keys
    assert prompt.messages[0].content == "Be brief."
    assert prompt.model.parameters == {"temperature": 0.5, "seed": 3}
    assert prompt.extra["owner"] == "me"
    assert prompt.warnings == [
        f"{path}:7: unknown Promptarchitect key 'owner' kept as is",
        f"{path}:5: 'temperature' is set twice: the top-level 0.5 is used, not "
        "parameters.temperature 0.9",
    ]


def test_equals_with_limits_warns_that_equals_decides(write: Write) -> None:
    text = (
        "---\nprovider: openai\nmodel: m\ntests:\n  t:\n    type: property\n"
        "    unit: words\n    equals: 3\n    limit: {max: 9}\n---\nHi\n"
    )
    path = write("p.prompt", text)
    prompt = load_prompt(path)
    spec = prompt.extra["promptarchitect"]["tests"]["t"]
    assert (spec["equals"], spec["min"], spec["max"]) == (3, None, None)
    assert prompt.warnings == [
        f"{path}:5: test 't': min/max are not used: equals decides (as in Promptarchitect)"
    ]


HEAD = "---\nprovider: openai\nmodel: m\n"


def with_tests(*lines: str) -> str:
    return HEAD + "tests:\n" + "".join(f"  {line}\n" for line in lines) + "---\nHi {{input}}\n"


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        (with_tests("a: {type: grade}"), 5,
         "test 'a': unknown type 'grade' (use one of question, score, metric, property, "
         "format, language, keyword)"),
        (with_tests("a:", "  prompt: Why?"), 5,
         "test 'a' has no 'type' (give one of question, score, metric, property, format, "
         "language, keyword)"),
        (with_tests("a:", "  type: question", "  promt: Why?"), 7,
         "test 'a': unknown key 'promt' (a question test has: type, prompt)"),
        (with_tests("a:", "  type: question"), 5, "test 'a': 'prompt' is required (text)"),
        (with_tests("s:", "  type: score", "  prompt: Rate", "  min: 1", "  max: 5",
                     "  threshold: 9"), 10, "test 's': 'threshold' (9) should be from 1 to 5"),
        (with_tests("s:", "  type: score", "  prompt: Rate", "  min: 5", "  max: 1",
                     "  threshold: 3"), 8, "test 's': 'min' (5) should be below 'max' (1)"),
        (with_tests("s:", "  type: score", "  prompt: Rate", "  min: 1", "  max: 5"), 5,
         "test 's': 'threshold' is required (a number)"),
        (with_tests("p:", "  type: property", "  unit: words"), 5,
         "test 'p': needs limit (min, max) or equals"),
        (with_tests("p:", "  type: property", "  property: {unit: words}"), 7,
         "test 'p': needs min, max or equal"),
        (with_tests("p:", "  type: property", "  unit: tokens", "  equals: 3"), 7,
         "test 'p': unit 'tokens' is not one of words, sentences, lines, paragraphs, "
         "characters"),
        (with_tests("p:", "  type: property", "  unit: words", "  limit: {min: 9, max: 2}"), 8,
         "test 'p': 'limit.min' (9) is above 'limit.max' (2)"),
        (with_tests("p:", "  type: property", "  unit: words", "  equals: 2.5"), 8,
         "test 'p': 'equals' should be a whole number"),
        (with_tests("p:", "  type: property", "  unit: words", "  property: {unit: words}"), 8,
         "test 'p': mixes the two property shapes"),
        (with_tests("m:", "  type: metric", "  metric: bleu", "  input: {answer: output}",
                     "  limit: {min: 0.5}"), 7, "test 'm': metric 'bleu' is not implemented"),
        (with_tests("m:", "  type: metric", "  metric: faithfulness",
                     "  input: {answer: output}", "  limit: {min: 0.5}"), 8,
         "test 'm': 'input' needs 'context'"),
        (with_tests("m:", "  type: metric", "  metric: faithfulness",
                     "  input: {answer: output, context: doc}", "  limit: {min: 80}"), 9,
         "test 'm': limit 80 is outside 0-1"),
        (with_tests("m:", "  type: metric", "  metric: faithfulness",
                     "  input: {answer: output, context: doc}", "  limit: {}"), 9,
         "test 'm': 'limit' needs min, max or both"),
        (with_tests("f: {type: format, format: yaml}"), 5,
         "test 'f': format 'yaml' is not one of json, html, markdown, text"),
        (with_tests("l:", "  type: language", "  lang_code: EN"), 7,
         "test 'l': lang_code 'EN' should be two lower-case letters"),
        (with_tests("k:", "  type: keyword", "  keyword: ''"), 7,
         "test 'k': 'keyword' is required (text)"),
        (HEAD + "tests: [a, b]\n---\nHi\n", 4, "'tests' should map test ids to test specs"),
        (HEAD + "temperature: hot\n---\nHi\n", 4,
         "'temperature' should be a number, got a string"),
        (HEAD + "date_created: [2023]\n---\nHi\n", 4, "'date_created' should be text"),
    ],
)  # fmt: skip
def test_bad_tests_are_one_error_with_their_line(
    write: Write, text: str, line: int, message: str
) -> None:
    path = write("bad.prompt", text)
    with pytest.raises(PromptFormatError) as info:
        load_prompt(path)
    assert info.value.one_line().startswith(f"{path}:{line}: frontmatter: {message}")


def test_referenced_files_must_exist_inside_the_prompts_folder(write: Write) -> None:
    head = "---\nprovider: openai\nmodel: m\n"
    path = write("p/a.prompt", head + "system_role: missing.md\n---\nHi\n")
    with pytest.raises(PromptFormatError) as info:
        load_prompt(path)
    assert info.value.line == 4
    assert "system_role file 'missing.md' not found" in info.value.message
    write("outside.md", "You are outside.")
    path = write("p/b.prompt", head + "system_role: ../outside.md\n---\nHi\n")
    with pytest.raises(PromptFormatError, match="outside allowed roots") as info:
        load_prompt(path)
    assert info.value.line == 4
    path = write("p/c.prompt", head + "test_path: ./nowhere\n---\nHi\n")
    with pytest.raises(PromptFormatError) as info:
        load_prompt(path)
    looked = path.parent / "nowhere"
    assert (info.value.line, info.value.message) == (
        4,
        f"frontmatter: test_path folder './nowhere' not found (looked for {looked})",
    )
    path = write("p/d.prompt", head + "test_path: ..\n---\nHi\n")
    with pytest.raises(PromptFormatError, match=r"test_path '\.\.' is outside the prompt's folder"):
        load_prompt(path)


def test_a_bad_sample_is_named_with_its_line(write: Write) -> None:
    write("s/ok.md", "fine\n")
    bad = write("s/bad.md", "---\ntopic: [unclosed\n---\nbody\n")
    path = write("p.prompt", "---\nprovider: openai\nmodel: m\ntest_path: s\n---\nHi\n")
    with pytest.raises(PromptFormatError) as info:
        load_prompt(path)
    assert (info.value.file, info.value.line) == (str(bad), 3)
    assert info.value.message.startswith("invalid test sample frontmatter YAML")
    write("s/bad.md", "---\n- a list\n---\nbody\n")
    with pytest.raises(PromptFormatError, match="must be a YAML mapping"):
        load_prompt(path)


def test_an_empty_test_path_folder_warns(write: Write, tmp_path: Path) -> None:
    (tmp_path / "s").mkdir()
    prompt = load_prompt(write("p.prompt", "---\nprovider: x\nmodel: m\ntest_path: s\n---\nHi\n"))
    assert prompt.test_samples == []
    assert prompt.warnings[0].endswith(
        ":4: test_path folder 's' holds no sample files (.md, .markdown, .txt)"
    )


def test_inspect_reports_a_bad_file_on_one_line(write: Write) -> None:
    path = write("bad.prompt", with_tests("a: {type: grade}"))
    result = run_cli("inspect", str(path))
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"promptgen: error: {path}:5: frontmatter: test 'a': unknown type 'grade' (use one of "
        "question, score, metric, property, format, language, keyword)"
    ]
