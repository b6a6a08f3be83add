"""Issue 29 item 5f: control characters from a prompt's name or body, or from a saved
run, are shown (`\\x1b`), never sent raw to the terminal by `inspect` and `run`."""

from __future__ import annotations

from pathlib import Path

from tests.cli.test_hostile_input import in_process
from tests.fakellm import FakeLLM
from tests.pipeline_fake import PipelineResponder

ESC = "\x1b"
PROMPT = (
    "---\n"
    'name: "evil\\e]0;pwned\\a\\e[2J"\n'
    'description: "d\\e[31mred"\n'
    '"odd\\e[2Jkey": 1\n'
    'inputs:\n  text:\n    type: string\n    sample: "s\\e[2J"\n'
    "---\nsystem:\nRewrite the sentence in upper case \x1b[2J\x1b]0;title\x07 now.\n\n"
    "user:\n{{text}}\n"
)


def test_inspect_shows_control_characters_escaped(tmp_path: Path) -> None:
    path = tmp_path / "evil.prompty"
    path.write_text(PROMPT)
    result = in_process(["inspect", str(path)])
    assert result.returncode == 0, result.stderr
    assert ESC not in result.stdout + result.stderr and "\x07" not in result.stdout
    assert "evil\\x1b]0;pwned\\x07\\x1b[2J" in result.stdout
    assert "upper case \\x1b[2J\\x1b]0;title\\x07 now." in result.stdout
    assert "d\\x1b[31mred" in result.stdout


def test_run_prints_no_control_character_from_the_prompt_or_the_model(tmp_path: Path) -> None:
    path = tmp_path / "evil.prompty"
    path.write_text(PROMPT)
    responder = PipelineResponder()
    with FakeLLM(responder=responder) as fake:
        args = ["run", str(path), "--effort", "min", "--api-base", fake.url, "--models", "m1"]
        result = in_process([*args, "--max-tests-to-run", "1", "--out", str(tmp_path / "o")])
    assert result.returncode == 0, result.stderr
    assert ESC not in result.stdout + result.stderr
    assert "\\x1b" in result.stdout + result.stderr
