"""Hostile input through the real CLI: one line (file, line, what to do), exit 2, no
traceback, and never a hang (see tests/cli/test_bad_input.py for the ordinary cases).

Every case is its own `promptgen` process; they run at once in a module fixture.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from promptgen import Context, cli
from promptgen.bounds import MAX_PROMPT_BYTES
from promptgen.model import PromptUnderTest
from tests.conftest import run_cli
from tests.test_limits import BILLION_LAUGHS

Make = Callable[[Path], Path]


def _file(name: str, content: str) -> Make:
    def make(folder: Path) -> Path:
        path = folder / name
        path.write_text(content, encoding="utf-8")
        return path

    return make


def _fifo(name: str) -> Make:
    def make(folder: Path) -> Path:
        os.mkfifo(folder / name)
        return folder / name

    return make


def _zero(folder: Path) -> Path:
    (folder / "zero.prompty").symlink_to("/dev/zero")
    return folder / "zero.prompty"


def _sparse(folder: Path) -> Path:
    with (folder / "big.prompty").open("wb") as handle:
        handle.truncate(MAX_PROMPT_BYTES + 1)
    return folder / "big.prompty"


def _context(change: Callable[[dict[str, Any]], object], raw: str | None = None) -> Make:
    def make(folder: Path) -> Path:
        data = json.loads(Context.new(PromptUnderTest(name="p", source="p.prompty")).to_json())
        change(data)
        path = folder / "context.json"
        path.write_text(raw if raw is not None else json.dumps(data), encoding="utf-8")
        return path

    return make


def _tests(data: dict[str, Any], count: int, same: bool) -> None:
    data["tests"] = [
        {"id": "test-1", "inputs": {"a": "x" if same else str(i)}} for i in range(count)
    ]


LAUGHS = "---\nname: x\nmetadata:\n  " + BILLION_LAUGHS.replace("\n", "\n  ") + "\n---\nhi\n"
DEEP_YAML = "---\nname: " + "[" * 100000 + "\n---\nhi\n"
DEEP_JSON = '{"version": 2, "intent": ' + "[" * 100000 + "]" * 100000 + "}"
TAGS = "---\nname: x\nmetadata: {tags: 42}\n---\nhi\n"
YML = "messages: [{role: user, content: x}]\nmodelParameters:\n  temperature: 2024-01-01\n"
HUGE = "---\nname: x\nseed: " + "9" * 5001 + "\n---\nhi\n"
INSPECT, DRY = ["inspect"], ["run", "--dry-run"]

CASES: list[tuple[str, list[str], Make, int | None, str]] = [
    # id, command (the file is appended), how to make the file, line, text of the message
    ("fifo-prompt", INSPECT, _fifo("p.prompty"), None, "named pipe (FIFO), not a regular"),
    ("dev-zero", INSPECT, _zero, None, "prompt file is a device, not a regular file"),
    ("oversize", INSPECT, _sparse, None, "over the 20 MB limit"),
    ("billion-laughs", INSPECT, _file("p.prompty", LAUGHS), 9, "aliases expand to more than"),
    ("deep-yaml", INSPECT, _file("p.prompty", DEEP_YAML), 2, "nested more than 64 levels"),
    ("metadata-tags", INSPECT, _file("p.prompty", TAGS), 3,
     "'metadata.tags' should be a list of strings, got a number"),
    ("nested-tags", DRY, _file("p.prompty", "---\nname: x\ntags: [[1]]\n---\nhi\n"), 3,
     "'tags.0' should be a string, got a list"),
    ("temperature-date", INSPECT, _file("p.prompt.yml", YML), 3,
     "'modelParameters.temperature' should be a number, got a date"),
    ("huge-int", INSPECT, _file("p.prompty", HUGE), 3, "a number with more than 4,300 digits"),
    ("nul-in-ref", INSPECT, _file("p.prompty", '---\nsample: "${file:a\\0b.json}"\n---\nhi\n'),
     2, "contains a NUL byte"),
    ("bad-check", INSPECT, _file("p.prompty", "---\nchecks:\n  - nope: 1\n---\nhi\n"), 3,
     "unknown check 'nope'"),
    ("bad-regex", INSPECT, _file("p.prompty", "---\nchecks:\n  - regex: '('\n---\nhi\n"), 3,
     "does not compile"),
    ("fifo-context", DRY, _fifo("context.json"), None, "context file is a named pipe (FIFO)"),
    ("deep-context", DRY, _context(lambda d: None, raw=DEEP_JSON), None,
     "more than 64 levels deep"),
    ("surrogate-context", DRY, _context(lambda d: d.update(intent="\ud800")), 1,
     "lone surrogate"),
    ("unknown-option", DRY, _context(lambda d: d["options"]["generation"].update(foo=1)), None,
     "unknown option 'generation.foo' in the saved options"),
    ("context-check-shape", DRY, _context(lambda d: d["prompt"].update(checks=[42])), None,
     "prompt.checks[0] is not a check: 42"),
    ("context-check-name", DRY, _context(lambda d: d["prompt"].update(checks=[{"nope": 1}])),
     None, "unknown check 'nope'"),
    ("duplicate-tests", DRY, _context(lambda d: _tests(d, 2, same=False)), None,
     "id test-1 appears twice, with different content"),
]  # fmt: skip


# In their own process (a hang would stop the test run); the rest run `promptgen.cli.main`
# in this process, which is the same code path minus the interpreter start-up.
IN_A_PROCESS = {"fifo-prompt", "dev-zero", "billion-laughs", "fifo-context", "deep-context"}


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str


def in_process(args: list[str]) -> Result:
    out, err = io.StringIO(), io.StringIO()
    saved = sys.argv
    sys.argv = ["promptgen", *args]
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            cli.main()
        code = 0
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else 1
    finally:
        sys.argv = saved
    return Result(code, out.getvalue(), err.getvalue())


def _run(case: tuple[str, list[str], Make, int | None, str], folder: Path) -> tuple[Path, Any]:
    name, command, make, _, _ = case
    (folder / name).mkdir()
    path = make(folder / name)
    if name in IN_A_PROCESS:
        return path, run_cli(*command, str(path))
    return path, None


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Any]]:
    folder = tmp_path_factory.mktemp("hostile-cli")
    with ThreadPoolExecutor(max_workers=3) as pool:
        done = pool.map(lambda case: _run(case, folder), CASES)
        return {case[0]: result for case, result in zip(CASES, done, strict=True)}


@pytest.mark.parametrize(
    ("name", "line", "text"), [pytest.param(c[0], *c[3:], id=c[0]) for c in CASES]
)
def test_hostile_input_is_one_line_exit_2(
    name: str, line: int | None, text: str, results: dict[str, tuple[Path, Any]]
) -> None:
    path, result = results[name]
    if result is None:
        command = next(c[1] for c in CASES if c[0] == name)
        result = in_process([*command, str(path)])
    stderr = result.stderr.strip()
    assert result.returncode == 2, stderr
    assert "Traceback" not in stderr
    assert len(stderr.splitlines()) == 1, stderr
    assert stderr.startswith("promptgen: error: ")
    if name.startswith("context-check-name"):
        assert "p.prompty" in stderr  # reported at the prompt the checks came from
    else:
        assert str(path) in stderr
    if line is not None:
        assert f"{path}:{line}:" in stderr
    assert text in stderr
    assert result.stdout == ""


def test_identical_duplicate_tests_are_kept_once_with_a_warning(tmp_path: Path) -> None:
    path = _context(lambda d: _tests(d, 3, same=True))(tmp_path)
    result = in_process(["run", "--dry-run", str(path)])
    assert result.returncode == 0, result.stderr
    warning = f"promptgen: warning: {path}: 2 test(s) saved twice with the same id and content"
    assert warning in result.stderr
    assert (
        len(json.loads(path.read_text(encoding="utf-8"))["tests"]) == 3
    )  # a dry run saves nothing
