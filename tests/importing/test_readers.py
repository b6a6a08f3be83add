"""The source readers and the .prompty writer, without the CLI."""

from __future__ import annotations

import pytest

from promptgen.importing import detect_kind, read_source, to_prompty, verify
from promptgen.importing.named import ImportAnswer, apply_answer
from promptgen.importing.pieces import Imported, Msg, Var, format_pieces
from promptgen.importing.writer import input_type
from promptgen.rendering.render import render_messages


@pytest.mark.parametrize(
    ("text", "suffix", "kind"),
    [
        ('PROMPT = "hi"', "", "python"),
        ('PROMPT = "hi"', ".txt", "python"),
        ("const p = `hi ${x}`;", "", "javascript"),
        ('[{"role": "user", "content": "hi"}]', "", "openai-json"),
        ("Summarize the text.", "", "text"),
        ("Hello", "", "text"),  # parses as Python, but holds no string
        ("x", ".ts", "javascript"),
    ],
)
def test_detect_kind(text: str, suffix: str, kind: str) -> None:
    assert detect_kind(text, suffix) == kind


def test_format_pieces() -> None:
    assert format_pieces("a {x} {{y}} {obj.attr} {n:>3} {0} {") == [
        "a ", Var("x"), " {y} ", Var("obj_attr"), " ", Var("n"), " {0} {",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "sample", "kind"),
    [
        ("n_items", None, "integer"),
        ("word_count", None, "integer"),
        ("is_draft", None, "boolean"),
        ("topic", None, "string"),
        ("n_items", "three", "string"),
        ("x", 2.5, "number"),
        ("x", [1], "array"),
        ("is_x", False, "boolean"),
    ],
)
def test_input_type(name: str, sample: object, kind: str) -> None:
    assert input_type(name, sample) == kind


NASTY = "a {{ b }} {% if %} {# c #} {{{ }}} }} {\nsystem:\n  user[a=1]:\n\\n 'q' end {"


def test_literal_text_renders_as_itself() -> None:
    imported = Imported("text", [Msg("system", [NASTY]), Msg("user", ["{", Var("x"), "}"])])
    prompt = verify(to_prompty(imported, "nasty", "test"), "nasty")
    assert [m.role for m in prompt.messages] == ["system", "user"]
    assert list(prompt.inputs) == ["x"]
    assert render_messages(prompt, {"x": "X"}) == [
        {"role": "system", "content": NASTY},
        {"role": "user", "content": "{X}"},
    ]


def test_python_never_runs_code() -> None:
    text = "P = f\"Hi {__import__('os').system('touch /tmp/pwned')}\"\n"
    imported = read_source(text, "x.py", "python")
    assert imported.variables == ["import_os_system_touch_tmp_pwned"]


def test_python_longest_string_and_warning() -> None:
    imported = read_source('A = "short"\nB = "a longer {thing} here"\n', "x.py", "python")
    assert [m.role for m in imported.messages] == ["user"]
    assert imported.variables == ["thing"]
    assert imported.warnings == [
        "x.py: 2 strings; took the longest (line 2); name them SYSTEM_PROMPT and USER_PROMPT "
        "to import both"
    ]


def test_langchain_chat_template_in_python() -> None:
    text = (
        "from langchain_core.prompts import ChatPromptTemplate\n"
        "prompt = ChatPromptTemplate.from_messages([\n"
        '    ("system", "You are {persona}."),\n    ("human", "{question}"),\n])\n'
    )
    imported = read_source(text, "x.py", "python")
    assert [(m.role, m.pieces) for m in imported.messages] == [
        ("system", ["You are ", Var("persona"), "."]),
        ("user", [Var("question")]),
    ]


def test_js_messages_in_a_call() -> None:
    text = (
        "const r = await openai.chat.completions.create({\n  model: 'gpt-4o', temperature: 0.5,\n"
        "  messages: [\n    { role: 'system', content: \"Be terse.\" },\n"
        "    { role: 'user', content: `Q: ${question}` },\n  ],\n});\n"
    )
    imported = read_source(text, "x.js", "javascript")
    assert imported.model == "gpt-4o" and imported.parameters == {"temperature": 0.5}
    assert [(m.role, m.pieces) for m in imported.messages] == [
        ("system", ["Be terse."]),
        ("user", ["Q: ", Var("question")]),
    ]


def test_answer_applied_on_exact_words_only() -> None:
    imported = read_source("Translate the note into Spanish. Spanish only.\n", "t", "text")
    answer = ImportAnswer.model_validate(
        {
            "name": "translate",
            "description": "Translates a note.",
            "inputs": [
                {"name": "language", "type": "string", "description": "Target.",
                 "replaces": "Spanish"},
                {"name": "count", "type": "integer", "description": "Not in it.",
                 "replaces": "seven"},
                {"name": "note", "type": "string", "description": "The note.", "replaces": ""},
            ],
        }
    )  # fmt: skip
    apply_answer(imported, answer)
    assert [(m.role, m.pieces) for m in imported.messages] == [
        ("user", ["Translate the note into ", Var("language"), ". ", Var("language"), " only."]),
        ("user", ["Count:\n", Var("count"), "\n\nNote:\n", Var("note")]),
    ]
    assert imported.samples == {"language": "Spanish"}
    assert imported.types == {"language": "string", "count": "integer", "note": "string"}
