"""`promptgen import` of the messages a Python or JS/TS file sends to
`client.chat.completions.create`: every message keeps its role, text and order,
f-string / template-literal parts become inputs, a name bound to a string in the file
is that string; what cannot be read stops the import (exit 2) naming file and line."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from promptgen.cli import run_app

Write = Callable[[str, str], Path]


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # sources are named as a user types them: `quiz.py`


def written(src: Path, capsys: pytest.CaptureFixture[str]) -> tuple[str, str]:
    """The .prompty `promptgen import` writes beside `src`, and its summary line."""
    assert run_app(args=["import", src.name, "--no-llm"]) == 0, capsys.readouterr().err
    captured = capsys.readouterr()
    assert captured.out == f"{src.with_suffix('.prompty').name}\n"
    return src.with_suffix(".prompty").read_text(encoding="utf-8"), captured.err


def refused(src: Path, capsys: pytest.CaptureFixture[str]) -> str:
    assert run_app(args=["import", src.name, "--no-llm"]) == 2
    assert not src.with_suffix(".prompty").exists()
    return capsys.readouterr().err


PY_INLINE = """\
from openai import OpenAI

client = OpenAI()


def quiz(topic: str, n_questions: int) -> str:
    response = client.chat.completions.create(
        model="gpt-4o-mini",
        temperature=0.2,
        messages=[
            {"role": "system", "content": "You write short school quizzes."},
            {"role": "user", "content": f"Write {n_questions} questions about {topic}."},
        ],
    )
    return response.choices[0].message.content or ""
"""

QUIZ_PROMPTY = """\
---
name: quiz
description: Imported from {src} ({kind}).
model:
  api: chat
  id: gpt-4o-mini
  parameters:
    temperature: 0.2
inputs:
  n_questions:
    type: integer
  topic:
    type: string
---
system:
You write short school quizzes.

user:
Write {{{{n_questions}}}} questions about {{{{topic}}}}.
"""


def test_python_inline_list_with_fstring(write: Write, capsys: pytest.CaptureFixture[str]) -> None:
    src = write("quiz.py", PY_INLINE)
    text, err = written(src, capsys)
    assert text == QUIZ_PROMPTY.format(src=src.name, kind="python")
    assert err == "promptgen: python: 2 messages; inputs: n_questions (integer), topic (string)\n"


PY_SYSTEM_NAME = """\
import openai

SYSTEM = "You are a terse translator. Keep names as they are."


def translate(text: str, language: str) -> str:
    reply = openai.chat.completions.create(
        model="gpt-4o",
        messages=[
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": f"Translate into {language}:\\n{text}"},
            {"role": "assistant", "content": "Here is the translation."},
        ],
    )
    return reply.choices[0].message.content
"""

TRANSLATE_PROMPTY = """\
---
name: translate
description: Imported from {src} ({kind}).
model:
  api: chat
  id: gpt-4o
inputs:
  language:
    type: string
  text:
    type: string
---
system:
You are a terse translator. Keep names as they are.

user:
Translate into {{{{language}}}}:
{{{{text}}}}

assistant:
Here is the translation.
"""


def test_python_system_prompt_in_a_name(write: Write, capsys: pytest.CaptureFixture[str]) -> None:
    src = write("translate.py", PY_SYSTEM_NAME)
    text, err = written(src, capsys)
    assert text == TRANSLATE_PROMPTY.format(src=src.name, kind="python")
    assert err == "promptgen: python: 3 messages; inputs: language (string), text (string)\n"


PY_LIST_NAME = '''\
from openai import OpenAI

GRADER_PROMPT = """You grade essays against a rubric.
Answer with a score from 1 to 10 and one sentence."""
client = OpenAI()


def grade(essay: str, rubric: str) -> str:
    messages = [
        {"role": "system", "content": GRADER_PROMPT},
        {"role": "user", "content": f"Rubric: {rubric}\\n\\nThe essay follows.\\n{essay}"},
    ]
    result = client.chat.completions.create(model="gpt-4o", messages=messages)
    return result.choices[0].message.content
'''

GRADE_PROMPTY = """\
---
name: grade
description: Imported from {src} ({kind}).
model:
  api: chat
  id: gpt-4o
inputs:
  rubric:
    type: string
  essay:
    type: string
---
system:
You grade essays against a rubric.
Answer with a score from 1 to 10 and one sentence.

user:
Rubric: {{{{rubric}}}}

The essay follows.
{{{{essay}}}}
"""


def test_python_messages_list_in_a_name(write: Write, capsys: pytest.CaptureFixture[str]) -> None:
    src = write("grade.py", PY_LIST_NAME)
    text, err = written(src, capsys)
    assert text == GRADE_PROMPTY.format(src=src.name, kind="python")
    assert err == "promptgen: python: 2 messages; inputs: rubric (string), essay (string)\n"


PY_CALL = """\
def ask(question):
    return client.chat.completions.create(
        model="gpt-4o",
        messages=[
            {"role": "system", "content": "Answer from the handbook."},
            {"role": "user", "content": build_prompt(question)},
        ],
    )
"""
PY_IMPORTED = """\
from prompts import SYSTEM


def ask(question):
    return client.chat.completions.create(
        model="gpt-4o",
        messages=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}],
    )
"""
PY_READ = """\
SYSTEM = open("system.txt").read()


def ask(question):
    messages = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": question},
    ]
    return client.chat.completions.create(model="gpt-4o", messages=messages)
"""
PY_HISTORY = """\
def ask(history, question):
    messages = [
        {"role": "system", "content": "Be brief."},
        *history,
        {"role": "user", "content": question},
    ]
    return client.chat.completions.create(model="gpt-4o", messages=messages)
"""
HINT = "(write it as a string literal, an f-string, or a name bound to one in this file)"


@pytest.mark.parametrize(
    ("source", "where", "message"),
    [
        (PY_CALL, 6, "cannot read the user message's content `build_prompt(question)`"),
        (PY_IMPORTED, 7, "cannot read the system message: `SYSTEM` is not bound to a string "
                         "in this file"),
        (PY_READ, 6, "cannot read the system message: `SYSTEM` is "
                     "`open('system.txt').read()` (line 1), not a string"),
        (PY_HISTORY, 4, "cannot read `*history` in a messages list"),
    ],
)  # fmt: skip
def test_python_what_cannot_be_read(
    write: Write, capsys: pytest.CaptureFixture[str], source: str, where: int, message: str
) -> None:
    src = write("ask.py", source)
    assert refused(src, capsys) == f"promptgen: error: {src.name}:{where}: {message} {HINT}\n"


JS_INLINE = """\
import OpenAI from "openai";

const client = new OpenAI();

export async function quiz(topic, nQuestions) {
  const response = await client.chat.completions.create({
    model: "gpt-4o-mini",
    temperature: 0.2,
    messages: [
      { role: "system", content: "You write short school quizzes." },
      { role: "user", content: `Write ${n_questions} questions about ${topic}.` },
    ],
  });
  return response.choices[0].message.content ?? "";
}
"""


def test_js_inline_list_with_template(write: Write, capsys: pytest.CaptureFixture[str]) -> None:
    src = write("quiz.js", JS_INLINE)
    text, err = written(src, capsys)
    assert text == QUIZ_PROMPTY.format(src=src.name, kind="javascript")
    assert err == (
        "promptgen: javascript: 2 messages; inputs: n_questions (integer), topic (string)\n"
    )


TS_SYSTEM_NAME = """\
import OpenAI from "openai";

const SYSTEM: string = "You are a terse translator. Keep names as they are.";
const client = new OpenAI();

export async function translate(text: string, language: string): Promise<string> {
  const reply = await client.chat.completions.create({
    model: "gpt-4o",
    messages: [
      { role: "system", content: SYSTEM },
      { role: "user", content: `Translate into ${language}:\\n${text}` },
      { role: "assistant", content: "Here is the translation." },
    ],
  });
  return reply.choices[0].message.content ?? "";
}
"""


def test_ts_system_prompt_in_a_name(write: Write, capsys: pytest.CaptureFixture[str]) -> None:
    src = write("translate.ts", TS_SYSTEM_NAME)
    text, err = written(src, capsys)
    assert text == TRANSLATE_PROMPTY.format(src=src.name, kind="javascript")
    assert err == "promptgen: javascript: 3 messages; inputs: language (string), text (string)\n"


JS_LIST_NAME = """\
const OpenAI = require("openai");

const GRADER_PROMPT = `You grade essays against a rubric.
Answer with a score from 1 to 10 and one sentence.`;
const client = new OpenAI();

async function grade(essay, rubric) {
  const messages = [
    { role: "system", content: GRADER_PROMPT },
    { role: "user", content: `Rubric: ${rubric}\\n\\nThe essay follows.\\n${essay}` },
  ];
  const result = await client.chat.completions.create({ model: "gpt-4o", messages });
  return result.choices[0].message.content;
}
"""


def test_js_messages_list_in_a_name(write: Write, capsys: pytest.CaptureFixture[str]) -> None:
    src = write("grade.js", JS_LIST_NAME)
    text, err = written(src, capsys)
    assert text == GRADE_PROMPTY.format(src=src.name, kind="javascript")
    assert err == "promptgen: javascript: 2 messages; inputs: rubric (string), essay (string)\n"


JS_CALL = """\
export async function ask(question) {
  return client.chat.completions.create({
    model: "gpt-4o",
    messages: [
      { role: "system", content: "Answer from the handbook." },
      { role: "user", content: buildPrompt(question) },
    ],
  });
}
"""
JS_IMPORTED = """\
import { SYSTEM } from "./prompts.js";

export async function ask(question) {
  return client.chat.completions.create({
    model: "gpt-4o",
    messages: [{ role: "system", content: SYSTEM }, { role: "user", content: question }],
  });
}
"""
JS_READ = """\
const SYSTEM = await fs.readFile("system.txt", "utf8");

export async function ask(question) {
  const messages = [
    { role: "system", content: SYSTEM },
    { role: "user", content: question },
  ];
  return client.chat.completions.create({ model: "gpt-4o", messages });
}
"""
JS_HISTORY = """\
export async function ask(history, question) {
  const messages = [
    { role: "system", content: "Be brief." },
    ...history,
    { role: "user", content: question },
  ];
  return client.chat.completions.create({ model: "gpt-4o", messages });
}
"""
JS_HINT = "(write it as a string literal, a template literal, or a name bound to one in this file)"


@pytest.mark.parametrize(
    ("source", "where", "message"),
    [
        (JS_CALL, 6, "cannot read the user message's content `buildPrompt(question)`"),
        (JS_IMPORTED, 6, "cannot read the system message: `SYSTEM` is not bound to a string "
                         "in this file"),
        (JS_READ, 5, "cannot read the system message: `SYSTEM` is "
                     "`await fs.readFile(\"system.txt\", \"utf8\")` (line 1), not a string"),
        (JS_HISTORY, 4, "cannot read `...history` in a messages list"),
    ],
)  # fmt: skip
def test_js_what_cannot_be_read(
    write: Write, capsys: pytest.CaptureFixture[str], source: str, where: int, message: str
) -> None:
    src = write("ask.js", source)
    assert refused(src, capsys) == f"promptgen: error: {src.name}:{where}: {message} {JS_HINT}\n"


JS_WHOLE_TEMPLATE = """\
export const answer = (question) =>
  client.chat.completions.create({
    model: "gpt-4o-mini",
    messages: [
      { role: "system", content: "Answer in one sentence." },
      { role: "user", content: `${question}` },
    ],
  });
"""


def test_js_template_that_is_one_input(write: Write, capsys: pytest.CaptureFixture[str]) -> None:
    src = write("answer.mjs", JS_WHOLE_TEMPLATE)
    text, err = written(src, capsys)
    assert text == (
        "---\nname: answer\ndescription: Imported from answer.mjs (javascript).\n"
        "model:\n  api: chat\n  id: gpt-4o-mini\ninputs:\n  question:\n    type: string\n"
        "---\nsystem:\nAnswer in one sentence.\n\nuser:\n{{question}}\n"
    )
    assert err == "promptgen: javascript: 2 messages; inputs: question (string)\n"
