"""`promptgen import`: each kind of source becomes a .prompty that `promptgen inspect`
reads back with the inputs, types and rendered messages the source meant."""

from __future__ import annotations

import io
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from promptgen.cli import run_app
from tests.conftest import run_cli
from tests.fakellm import FakeLLM, json_reply


def imported(path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, Any]:
    """Import `path`, then inspect the result as JSON."""
    assert run_app(args=["import", str(path), *extra]) == 0, capsys.readouterr().err
    out = path.with_suffix(".prompty")
    assert capsys.readouterr().out.strip() == str(out)
    assert run_app(args=["inspect", str(out), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def inputs(data: dict[str, Any]) -> dict[str, tuple[str, Any]]:
    return {n: (i["type"], i["sample"]) for n, i in data["prompt"]["inputs"].items()}


def rendered(data: dict[str, Any]) -> list[tuple[str, str]]:
    return [(m["role"], m["content"]) for m in data["rendered"]]


Write = Callable[[str, str], Path]


def test_plain_text_with_no_llm(write: Write, capsys: pytest.CaptureFixture[str]) -> None:
    src = write("support.txt", "You answer billing questions for ACME. Be brief.\n")
    data = imported(src, capsys, "--no-llm")
    assert data["prompt"]["name"] == "support"
    assert inputs(data) == {"input": ("string", None)}
    assert [(m["role"], m["content"]) for m in data["prompt"]["messages"]] == [
        ("system", "You answer billing questions for ACME. Be brief."),
        ("user", "{{input}}"),
    ]


def test_langchain_template(write: Write, capsys: pytest.CaptureFixture[str]) -> None:
    src = write(
        "summary.txt",
        "Summarize {article} in {n_sentences} sentences for {is_expert} readers.\n"
        'Answer as JSON: {{"summary": "..."}} and keep {{ literal }} and {% raw %}.\n',
    )
    data = imported(src, capsys)
    assert inputs(data) == {
        "article": ("string", None),
        "n_sentences": ("integer", None),
        "is_expert": ("boolean", None),
    }
    assert data["inputs_detected"] == []
    text = data["prompt"]["messages"][0]["content"]
    assert data["prompt"]["messages"][0]["role"] == "user"
    assert "{{article}}" in text and "{{n_sentences}}" in text
    # literal braces render as text, not as template syntax
    content = rendered(data)[0][1]
    assert content.endswith(
        'Answer as JSON: {"summary": "..."} and keep { literal } and {% raw %}.'
    )


def test_python_literal(write: Write, capsys: pytest.CaptureFixture[str]) -> None:
    src = write(
        "app.py",
        'import os\n\nSYSTEM_PROMPT = (\n    "You write quizzes. "\n'
        '    "Never reveal the answers.\\nuser:"\n)\n'
        'question_count = 4\ntopic = "volcanoes"\n'
        'USER_TEMPLATE = f"Write {question_count} questions about {topic} for {{grade}} "'
        ' + level + "."\n',
    )
    data = imported(src, capsys)
    assert inputs(data) == {
        "question_count": ("integer", 4),
        "topic": ("string", "volcanoes"),
        "level": ("string", None),
    }
    assert rendered(data) == [
        ("system", "You write quizzes. Never reveal the answers.\nuser:"),
        ("user", "Write 4 questions about volcanoes for {grade} <level>."),
    ]


def test_python_messages_list_and_call(write: Write, capsys: pytest.CaptureFixture[str]) -> None:
    src = write(
        "call.py",
        "resp = client.chat.completions.create(\n    model='gpt-4o-mini', temperature=0.3,\n"
        "    messages=[{'role': 'system', 'content': 'Translate to French.'},\n"
        "              {'role': 'user', 'content': f'Text: {text}'}],\n)\n",
    )
    data = imported(src, capsys)
    assert data["prompt"]["model"]["id"] == "gpt-4o-mini"
    assert data["prompt"]["model"]["parameters"] == {"temperature": 0.3}
    assert inputs(data) == {"text": ("string", None)}
    assert rendered(data) == [("system", "Translate to French."), ("user", "Text: <text>")]


def test_js_literal(write: Write, capsys: pytest.CaptureFixture[str]) -> None:
    src = write(
        "bot.js",
        "// prompts\n"
        "const systemPrompt = 'You write haiku about ' + subject + '. Don\\'t rhyme.';\n"
        "export const userPrompt = `Write ${n_lines} lines about ${subject}.\n"
        'Keep {{this}} and ${isDraft ? 1 : 2}.`;\nconst subject = "rain";\n'
        "function unrelated() { return 1; }\n",
    )
    data = imported(src, capsys)
    assert inputs(data) == {
        "subject": ("string", "rain"),
        "n_lines": ("integer", None),
        "isDraft_1_2": ("string", None),
    }
    assert rendered(data) == [
        ("system", "You write haiku about rain. Don't rhyme."),
        ("user", "Write <n_lines> lines about rain.\nKeep {{this}} and <isDraft_1_2>."),
    ]


def test_openai_messages_json(write: Write, capsys: pytest.CaptureFixture[str]) -> None:
    body = {
        "model": "gpt-4o",
        "temperature": 0,
        "max_tokens": 200,
        "messages": [
            {"role": "developer", "content": "Classify support tickets."},
            {"role": "user", "content": [{"type": "text", "text": "Ticket: {{ticket}}"}]},
            {"role": "assistant", "content": "category:"},
        ],
        "variables": {"ticket": "My parcel is late"},
    }
    data = imported(write("chat.json", json.dumps(body)), capsys)
    assert data["prompt"]["model"]["parameters"] == {"temperature": 0, "max_tokens": 200}
    assert inputs(data) == {"ticket": ("string", "My parcel is late")}
    assert rendered(data) == [
        ("system", "Classify support tickets."),
        ("user", "Ticket: My parcel is late"),
        ("assistant", "category:"),
    ]


def _llm_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PROMPTGEN_", "OPENAI_"))}
    return {**env, "PROMPTGEN_CACHE_DIR": str(tmp_path / "cache")}


def test_llm_names_the_inputs(fake_llm: FakeLLM, write: Write, tmp_path: Path) -> None:
    src = write(
        "reply.txt",
        "Write a polite reply in German to the customer email below. Sign as Dana.\n",
    )
    fake_llm.queue(
        json_reply(
            {
                "name": "polite-reply",
                "description": "Writes a polite reply to a customer email.",
                "inputs": [
                    {"name": "language", "type": "string", "description": "Reply language.",
                     "replaces": "German"},
                    {"name": "email", "type": "string", "description": "The customer email.",
                     "replaces": ""},
                    {"name": "agent", "type": "string", "description": "Who signs.",
                     "replaces": "Dana"},
                ],
            }
        )
    )  # fmt: skip
    result = run_cli(
        "import", str(src), "--api-base", fake_llm.url, "--model", "openai/fake",
        env=_llm_env(tmp_path),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    sent = fake_llm.requests[0]["messages"]
    assert "<PROMPT>\nsystem:\nWrite a polite reply in German" in sent[-1]["content"]
    out = tmp_path / "reply.prompty"
    shown = run_cli("inspect", str(out), "--json", env=_llm_env(tmp_path))
    data = json.loads(shown.stdout)
    assert data["prompt"]["name"] == "polite-reply"
    assert data["prompt"]["description"] == "Writes a polite reply to a customer email."
    assert inputs(data) == {
        "language": ("string", "German"),
        "agent": ("string", "Dana"),
        "email": ("string", None),
    }
    assert [(m["role"], m["content"]) for m in data["prompt"]["messages"]] == [
        ("user", "Write a polite reply in {{language}} to the customer email below. "
                 "Sign as {{agent}}."),
        ("user", "{{email}}"),
    ]  # fmt: skip


def test_llm_failure_is_one_line(fake_llm: FakeLLM, write: Write, tmp_path: Path) -> None:
    src = write("p.txt", "Explain the rules of chess to a beginner.\n")
    fake_llm.responder = lambda body: json_reply({"wrong": True})
    result = run_cli("import", str(src), "--api-base", fake_llm.url, env=_llm_env(tmp_path))
    assert result.returncode == 3
    assert "could not name the inputs" in result.stderr and "--no-llm" in result.stderr
    assert not (tmp_path / "p.prompty").exists()


def test_stdin_to_stdout_and_overwrite(
    write: Write, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    raw = io.TextIOWrapper(io.BytesIO(b"Rate {answer} from 1 to {max_score}.\n"))
    monkeypatch.setattr(sys, "stdin", raw)
    assert run_app(args=["import", "-", "--name", "Rate It"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("---\nname: rate-it\n")
    assert "user:\nRate {{answer}} from 1 to {{max_score}}.\n" in text
    src = write("x.txt", "Hello {name}")
    write("x.prompty", "kept")
    assert run_app(args=["import", str(src)]) == 2
    assert "x.prompty: already exists (pass --force" in capsys.readouterr().err
    assert (src.parent / "x.prompty").read_text() == "kept"
    assert run_app(args=["import", str(src), "--force"]) == 0
    assert "{{name}}" in (src.parent / "x.prompty").read_text()


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("bad.py", "x = (\n", "bad.py:1: not Python"),
        ("bad.json", '{"messages": [{"role": "robot", "content": "x"}]}', "no role promptgen"),
        ("none.py", "x = 1\n", "no prompt found"),
        ("a.prompty", "---\nname: a\n---\nhi", "already a .prompty file"),
    ],
)
def test_bad_sources(
    write: Write, capsys: pytest.CaptureFixture[str], name: str, content: str, message: str
) -> None:
    assert run_app(args=["import", str(write(name, content))]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
