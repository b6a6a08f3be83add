"""Loading each format into PromptUnderTest: keys, shapes, references, detection."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from promptgen import load_prompt
from promptgen.errors import PromptFormatError, RenderError
from promptgen.formats.body import parse_messages
from promptgen.formats.refs import allow_env

Write = Callable[[str, str], Path]


def test_prompty_v1_keys(write: Write) -> None:
    path = write(
        "v1.prompty",
        """---
name: Basic
description: v1 shape
model:
  api: chat
  configuration:
    type: azure_openai
    azure_deployment: gpt-35-turbo
    api_key: sk-literal-secret
  parameters:
    temperature: 0.3
    max_tokens: 120
sample:
  firstName: Jane
inputs:
  firstName:
    type: string
    description: first name
  question:
    type: string
    default: Why?
outputs:
  answer: {type: string}
template: jinja2
---
system:
Hello {{firstName}}.
user:
{{question}}
""",
    )
    prompt = load_prompt(path)
    assert prompt.model.id == "gpt-35-turbo" and prompt.model.provider == "azure"
    assert prompt.model.api == "chat"
    assert prompt.model.parameters == {"temperature": 0.3, "max_tokens": 120}
    assert prompt.inputs["firstName"].sample == "Jane"
    assert prompt.inputs["question"].default == "Why?"
    assert prompt.outputs == {"answer": {"type": "string"}}
    assert not prompt.warnings
    dumped = json.dumps(prompt.model_dump(mode="json"))
    assert "sk-literal-secret" not in dumped  # never copied into anything written


def test_prompty_v2_keys_and_list_inputs(write: Write) -> None:
    path = write(
        "v2.prompty",
        """---
name: v2
model:
  id: gpt-4o
  provider: openai
  apiType: chat
  options:
    temperature: 0.1
    maxOutputTokens: 300
    topP: 0.9
    stopSequences: ["###"]
inputs:
  - name: topic
    kind: string
    default: science
    enumValues: [science, art]
  - name: count
    kind: integer
    required: true
template:
  format: mustache
  parser: prompty
---
{{topic}} x{{count}}
""",
    )
    prompt = load_prompt(path)
    assert prompt.model.id == "gpt-4o" and prompt.model.provider == "openai"
    assert prompt.model.parameters == {
        "temperature": 0.1,
        "max_tokens": 300,
        "top_p": 0.9,
        "stop": ["###"],
    }
    assert prompt.inputs["topic"].enum == ["science", "art"]
    assert prompt.inputs["count"].type == "integer" and prompt.inputs["count"].required
    assert prompt.template_engine == "mustache"


def test_shorthands(write: Write) -> None:
    path = write("s.prompty", "---\nmodel: gpt-4o\ninputs:\n  joke: a tissue joke\n---\n{{joke}}")
    prompt = load_prompt(path)
    assert prompt.model.id == "gpt-4o"
    assert prompt.inputs["joke"].sample == "a tissue joke"
    assert prompt.name == "s"


def test_promptpex_extensions(write: Write) -> None:
    write("data/samples.json", json.dumps([{"text": "from file", "output": "ok"}]))
    write("data/more.csv", "text,expected\ncsv row,fine\n")
    write("data/lines.jsonl", '{"text": "jsonl row"}\n')
    path = write(
        "p.prompty",
        """---
name: pex
tags: [paper, scorer]
scenarios:
  - name: formal
    instructions: Use formal language.
    parameters: {style: formal}
  - name: plain
testSamples:
  - {text: inline, output: fine}
  - data/samples.json
  - data/more.csv
  - data/lines.jsonl
instructions:
  intent: classify
  inputSpec: short text
  outputRules: one word
  inverseOutputRules: several words
  testExpansion: make it longer
imported: {from: elsewhere}
---
{{style}} {{text}}
""",
    )
    prompt = load_prompt(path)
    assert prompt.tags == ["paper", "scorer"]
    assert prompt.scenarios[0].parameters == {"style": "formal"}
    assert prompt.scenarios[1].parameters == {}
    got = [(s.inputs, s.expected, s.source) for s in prompt.test_samples]
    assert got == [
        ({"text": "inline"}, "fine", None),
        ({"text": "from file"}, "ok", "data/samples.json"),
        ({"text": "csv row"}, "fine", "data/more.csv"),
        ({"text": "jsonl row"}, None, "data/lines.jsonl"),
    ]
    i = prompt.instructions
    assert (i.intent, i.input_spec, i.output_rules) == ("classify", "short text", "one word")
    assert (i.inverse_output_rules, i.test_expansion) == ("several words", "make it longer")
    assert prompt.frontmatter["imported"] == {"from": "elsewhere"}
    assert [n for n, s in prompt.inputs.items() if s.detected] == ["style", "text"]


def test_env_and_file_references(write: Write, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PG_ENDPOINT", "https://example.invalid")
    monkeypatch.setenv("PG_KEY", "secret-value-123")
    monkeypatch.delenv("PG_UNSET", raising=False)
    write("sub/conn.json", json.dumps({"endpoint": "from-file"}))
    path = write(
        "r.prompty",
        """---
description: ${env:PG_UNSET:fallback text}
model:
  id: m
  connection:
    endpoint: ${env:PG_ENDPOINT}
    apiKey: ${env:PG_KEY}
    other: ${env:PG_UNSET}
  options: ${file:sub/conn.json}
---
hi
""",
    )
    with allow_env(["PG_ENDPOINT", "PG_KEY", "PG_UNSET"]):  # --allow-env
        prompt = load_prompt(path)
    assert prompt.description == "fallback text"
    assert prompt.model.connection["endpoint"] == "https://example.invalid"
    assert prompt.model.connection["apiKey"] == "secret-value-123"  # usable in memory
    assert prompt.model.connection["other"] == "${env:PG_UNSET}"
    assert any("PG_UNSET" in w for w in prompt.warnings)
    assert prompt.model.parameters == {"endpoint": "from-file"}
    dumped = json.dumps(prompt.model_dump(mode="json"))
    assert "secret-value-123" not in dumped


def test_env_missing_outside_model_is_an_error(write: Write) -> None:
    path = write("r.prompty", "---\ndescription: ${env:PG_SURELY_UNSET}\n---\nhi\n")
    unset = pytest.raises(PromptFormatError, match="is not set")
    with allow_env(["PG_SURELY_UNSET"]), unset as info:
        load_prompt(path)
    assert info.value.line == 2


def test_file_reference_may_not_escape_the_prompt_folder(tmp_path: Path) -> None:
    (tmp_path / "secret.json").write_text('{"k": "leak"}')
    (tmp_path / "app").mkdir()
    path = tmp_path / "app" / "p.prompty"
    path.write_text("---\nmodel:\n  connection: ${file:../secret.json}\n---\nhi\n")
    with pytest.raises(PromptFormatError, match="outside allowed roots"):
        load_prompt(path)
    path.write_text("---\ntestSamples:\n  - ../secret.json\n---\nhi\n")
    with pytest.raises(PromptFormatError, match="outside allowed roots"):
        load_prompt(path)


def test_unknown_keys_warn_and_are_preserved(write: Write) -> None:
    prompt = load_prompt(write("u.prompty", "---\nname: u\ncustomThing: {a: 1}\n---\nhi {{x}}"))
    assert prompt.extra == {"customThing": {"a": 1}}
    assert len(prompt.warnings) == 1 and "customThing" in prompt.warnings[0]
    assert ":3:" in prompt.warnings[0]


def test_role_markers() -> None:
    body = (
        'preamble text\n# System:\nsys\nUSER[name="Ann", id=7, vip=true, w=1.5]:\n hi \n'
        "developer:\ndev\nfunction:\nf\ntool:\nt\nassistant :\na\n"
    )
    messages = parse_messages(body, "f")
    assert [m.role for m in messages] == [
        "system",
        "system",
        "user",
        "developer",
        "function",
        "tool",
        "assistant",
    ]
    assert messages[0].content == "preamble text"
    assert messages[2].attributes == {"name": "Ann", "id": 7, "vip": True, "w": 1.5}
    assert messages[2].content == " hi "
    assert [m.line for m in messages] == [1, 3, 5, 7, 9, 11, 13]


def test_message_lines_point_into_the_file(write: Write) -> None:
    prompt = load_prompt(write("l.prompty", "---\nname: l\n---\nsystem:\n\nfirst\nuser:\n{{q}}\n"))
    assert [m.line for m in prompt.messages] == [6, 8]


def test_input_detection_rule(write: Write) -> None:
    declared = "---\ninputs:\n  a: {type: string}\n---\n{{a}} {{b}}\n"
    prompt = load_prompt(write("d.prompty", declared))
    assert [(n, s.detected) for n, s in prompt.inputs.items()] == [("a", False), ("b", True)]
    bare = load_prompt(write("bare.md", "Write a haiku about the sea."))
    assert list(bare.inputs) == ["input"] and bare.inputs["input"].detected
    assert [(m.role, m.content) for m in bare.messages] == [
        ("system", "Write a haiku about the sea."),
        ("user", "{{input}}"),
    ]
    assert bare.format == "markdown"


def test_txt_with_frontmatter(write: Write) -> None:
    prompt = load_prompt(write("t.txt", "---\nname: txt\n---\nuser:\n{{q}}\n"))
    assert prompt.format == "text" and prompt.name == "txt" and list(prompt.inputs) == ["q"]


def test_github_models_prompt(write: Write) -> None:
    path = write(
        "g.prompt.yml",
        """name: Summ
description: d
model: openai/gpt-4o-mini
modelParameters: {temperature: 0.5, maxTokens: 200, topP: 1}
responseFormat: json_object
messages:
  - role: system
    content: You summarise.
  - role: user
    content: "Text: {{input}} in {{lang}}"
testData:
  - input: a b c
    lang: en
    expected: abc
evaluators:
  - name: starts
    string: {startsWith: Summary}
customKey: 1
""",
    )
    prompt = load_prompt(path)
    assert prompt.format == "prompt.yml" and prompt.template_engine == "mustache"
    assert prompt.model.id == "openai/gpt-4o-mini"
    assert prompt.model.parameters == {
        "temperature": 0.5,
        "max_tokens": 200,
        "top_p": 1,
        "response_format": {"type": "json_object"},
    }
    assert list(prompt.inputs) == ["input", "lang"]
    assert prompt.test_samples[0].inputs == {"input": "a b c", "lang": "en"}
    assert prompt.test_samples[0].expected == "abc"
    assert prompt.frontmatter["evaluators"][0]["name"] == "starts"
    assert prompt.extra == {"customKey": 1} and prompt.warnings
    assert prompt.checks == [{"istarts-with": "Summary", "name": "starts"}]
    assert prompt.check_lines == [16]  # the evaluator's line


def test_github_models_evaluator_names_become_metric_names(write: Write) -> None:
    from promptgen.cli.inspect_view import inspect_data
    from promptgen.evaluation import check_metrics
    from promptgen.options import Options

    text = """messages: [{role: user, content: "{{q}}"}]
evaluators:
  - name: mentions the refund
    string: {contains: refund}
  - string: {endsWith: "."}
  - name: polite
    llm: {modelId: openai/gpt-4o, prompt: "Is it polite?"}
"""
    prompt = load_prompt(write("g.prompt.yml", text))
    metrics = check_metrics(prompt, Options())
    assert [m.name for m in metrics] == ["mentions the refund", "iends-with=."]
    data = inspect_data(prompt)
    assert [(c["name"], c["line"]) for c in data["checks"]] == [
        ("mentions the refund", 3),
        ("iends-with=.", 5),
    ]
    assert data["evaluators"] == [
        {"name": "mentions the refund", "kind": "string", "run": True},
        {"name": None, "kind": "string", "run": True},
        {"name": "polite", "kind": "llm", "run": False},
    ]


def test_content_hash_changes_with_the_prompt(write: Write) -> None:
    a = load_prompt(write("a.prompty", "---\nname: a\n---\nhello {{x}}"))
    b = load_prompt(write("b.prompty", "---\nname: b\n---\nhello {{x}}"))
    c = load_prompt(write("c.prompty", "---\nname: c\n---\nhello there {{x}}"))
    assert a.content_hash() == b.content_hash() != c.content_hash()


def test_bracket_lines_without_attributes_are_text() -> None:
    messages = parse_messages("system:\nitems[0]:\nmore\n", "f")
    assert [(m.role, m.content) for m in messages] == [("system", "items[0]:\nmore")]


def test_github_models_error_lines_point_into_block_content(write: Write) -> None:
    text = "messages:\n  - role: user\n    content: |\n      line one\n      {{#open}}\n"
    with pytest.raises(RenderError) as info:
        load_prompt(write("g.prompt.yml", text))
    assert info.value.line == 5
    prompt = load_prompt(write("h.yml", "messages:\n  - role: user\n    content: |\n      {{q}}\n"))
    assert prompt.name == "h" and prompt.messages[0].line == 4


def test_sample_file_must_be_a_mapping(write: Write) -> None:
    write("s.json", "[1, 2]")
    with pytest.raises(PromptFormatError, match="must hold one object"):
        load_prompt(write("p.prompty", "---\nsample: s.json\n---\n{{a}}\n"))


def test_fixed_choice_error_is_readable(write: Write) -> None:
    text = "responseFormat: xml\nmessages:\n  - {role: user, content: x}\n"
    with pytest.raises(PromptFormatError) as info:
        load_prompt(write("g.prompt.yml", text))
    assert "'responseFormat' should be one of 'text', 'json_object' or 'json_schema'" in str(
        info.value
    )
