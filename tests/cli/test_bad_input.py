"""Bad input through the real CLI: one line (file, line, what to do), exit 2, no traceback."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import run_cli

Write = Callable[[str, str | bytes], Path]

CASES: list[tuple[str, str, str | bytes, int | None, str]] = [
    # id, file name, content, expected line, text the message must contain
    ("malformed-yaml", "p.prompty", "---\nname: x\ninputs: [a, b\n---\nhi\n", 4, "invalid frontmatter"),
    ("wrong-type", "p.prompty", "---\nname: x\nscenarios: just text\n---\nhi\n", 3, "'scenarios'"),
    ("wrong-nested-type", "p.prompty", "---\nscenarios:\n  - name: a\n    parameters: [1]\n---\nhi\n", 4, "parameters"),
    ("scenario-without-name", "p.prompty", "---\nscenarios:\n  - instructions: x\n---\nhi\n", 3, "'name'"),
    ("unknown-role", "p.prompty", "---\nname: x\n---\nsystem:\nok\nnarrator[voice=\"deep\"]:\nhi\n", 6, "unknown role 'narrator'"),
    ("unknown-role-yml", "p.prompt.yml", "messages:\n  - role: system\n    content: a\n  - role: robot\n    content: b\n", 4, "unknown role 'robot'"),
    ("missing-testsamples-file", "p.prompty", "---\ntestSamples:\n  - {a: 1}\n  - nothere.json\n---\n{{a}}\n", 4, "nothere.json"),
    ("missing-file-ref", "p.prompty", "---\nname: x\nsample: ${file:gone.json}\n---\nhi\n", 3, "gone.json"),
    ("file-ref-traversal", "p.prompty", "---\nsample: ${file:../../etc/passwd}\n---\nhi\n", 2, "outside allowed roots"),
    ("env-unset", "p.prompty", "---\nname: ${env:PROMPTGEN_TEST_NOT_SET}\n---\nhi\n", 2, "PROMPTGEN_TEST_NOT_SET"),
    ("binary", "p.prompty", b"\x89PNG\r\n\x1a\n\x00\x00\x00", None, "binary"),
    ("empty", "p.prompty", "", None, "empty"),
    ("blank", "p.md", "  \n\n", None, "empty"),
    ("not-utf8", "p.txt", b"hello\n\xff\xfe world", 2, "UTF-8"),
    ("unclosed-frontmatter", "p.prompty", "---\nname: x\nhi\n", 1, "no closing '---'"),
    ("frontmatter-not-mapping", "p.prompty", "---\n- a\n- b\n---\nhi\n", 2, "mapping"),
    ("template-syntax", "p.prompty", "---\nname: x\n---\nuser:\nfine\n{% for x in %}\n", 6, "syntax error"),
    ("template-engine", "p.prompty", "---\ntemplate: handlebars\n---\nhi\n", 2, "handlebars"),
    ("bad-attributes", "p.prompty", "user[=oops]:\nhi\n", 1, "role attributes"),
    ("yml-not-a-prompt", "p.yml", "jobs:\n  x: 1\n", 1, "not a GitHub Models prompt"),
    ("yml-bad-json-schema", "p.prompt.yml", "responseFormat: json_schema\njsonSchema: '{bad'\nmessages:\n  - {role: user, content: x}\n", 2, "jsonSchema"),
    ("input-list-without-name", "p.prompty", "---\ninputs:\n  - kind: string\n---\nhi\n", 3, "needs a 'name'"),
]  # fmt: skip


def _assert_one_line_error(result: object, path: Path, line: int | None, text: str) -> None:
    stderr = result.stderr.strip()  # type: ignore[attr-defined]
    assert result.returncode == 2, stderr  # type: ignore[attr-defined]
    assert "Traceback" not in stderr
    assert len(stderr.splitlines()) == 1, stderr
    assert stderr.startswith("promptgen: error: ")
    assert str(path) in stderr
    if line is not None:
        assert f"{path}:{line}:" in stderr
    assert text in stderr
    assert result.stdout == ""  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("name", "content", "line", "text"),
    [pytest.param(*case[1:], id=case[0]) for case in CASES],
)
def test_bad_file(
    write: Write, name: str, content: str | bytes, line: int | None, text: str
) -> None:
    path = write(name, content)
    _assert_one_line_error(run_cli("inspect", str(path)), path, line, text)


def test_directory_instead_of_file(tmp_path: Path) -> None:
    _assert_one_line_error(run_cli("inspect", str(tmp_path)), tmp_path, None, "is a folder")


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.prompty"
    _assert_one_line_error(run_cli("inspect", str(path)), path, None, "file not found")


def test_unknown_key_only_warns(write: Write) -> None:
    path = write("p.prompty", "---\nname: x\nmystery: 1\n---\nhi {{a}}\n")
    result = run_cli("inspect", str(path))
    assert result.returncode == 0
    assert "warning" in result.stderr and "mystery" in result.stderr
    assert "Traceback" not in result.stderr


def test_debug_env_shows_traceback(write: Write) -> None:
    path = write("p.prompty", "---\nname: [x\n---\nhi\n")
    result = run_cli("inspect", str(path), env={**os.environ, "PROMPTGEN_DEBUG": "1"})
    assert result.returncode != 0
    assert "Traceback" in result.stderr and "PromptFormatError" in result.stderr
