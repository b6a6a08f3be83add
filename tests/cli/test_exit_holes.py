"""Issue 29 item 5c: paths and values that ended in "internal error" (exit 3) are one
line, exit 2, each with its exact text."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.cli.test_hostile_input import in_process
from tests.fakellm import FakeLLM
from tests.pipeline_fake import PipelineResponder

REPO = Path(__file__).resolve().parents[2]
SAMPLE = str(REPO / "samples" / "classify-sentiment.prompty")


def one_line(args: list[str]) -> str:
    """The run's error line, checked to be its only output and exit 2."""
    result = in_process(args)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    return lines[0]


def test_an_out_folder_where_no_file_can_be_made_fails_before_any_call(tmp_path: Path) -> None:
    assert one_line(["run", "--dry-run", SAMPLE, "--out", "/proc/self"]) == (
        "promptgen: error: --out /proc/self: no file can be created in /proc/self "
        "(No such file or directory) (give a folder you can write to)"
    )


def test_schema_out_that_is_a_device() -> None:
    assert one_line(["schema", "--out", "/dev/null"]) == (
        "promptgen: error: --out /dev/null is not a folder (give a folder path)"
    )


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full on this system")
def test_a_junit_file_that_cannot_be_written(tmp_path: Path) -> None:
    with FakeLLM(responder=PipelineResponder()) as fake:
        args = ["run", SAMPLE, "--effort", "min", "--api-base", fake.url, "--models", "m1"]
        args += ["--max-tests-to-run", "1", "--out", str(tmp_path / "out"), "--quiet"]
        result = in_process([*args, "--junit", "/dev/full"])
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines()[-1] == (
        "promptgen: error: --junit /dev/full: cannot write it: No space left on device "
        "(give a path where a file can be written)"
    )
    assert (tmp_path / "out" / "context.json").is_file()  # the run itself is kept


def test_a_verdict_scale_too_long_to_list(tmp_path: Path) -> None:
    judge = (REPO / "samples" / "judges" / "reply-tone.verdict.md").read_text()
    path = tmp_path / "huge.verdict.md"
    path.write_text(judge.replace("scale: 1-5", "scale: 1-99999999999"))
    assert one_line(["inspect", str(path)]) == (
        f"promptgen: error: {path}:4: frontmatter: scale 1-99999999999 has 99,999,999,999 "
        "points, more than 1,000 (a judge grades on a short scale, such as 1-5 or 0-100)"
    )
    path.write_text(judge.replace("scale: 1-5", "scale: 1-" + "9" * 5000))
    assert one_line(["inspect", str(path)]).endswith(
        "is out of range (write scale: 1-5, scale: [good, fair, poor] or scale: boolean)"
    )


def test_a_promptarchitect_test_path_too_long_for_the_filesystem(tmp_path: Path) -> None:
    folder = tmp_path / "pa"
    shutil.copytree(REPO / "samples" / "promptarchitect", folder)
    path = folder / "answer-from-article.prompt"
    long = "./" + "a" * 100_000
    path.write_text(path.read_text().replace("test_path: ./tests", f"test_path: {long}"))
    assert one_line(["inspect", str(path)]) == (
        f"promptgen: error: {path}:11: frontmatter: test_path '{long[:199]}…' cannot be "
        "read: File name too long (fix the path; it is relative to the prompt file)"
    )


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ("{{ q.__class__ }}", "template reaches for '__class__' on a str; templates may only "
         "use data, not Python internals"),
        ("{{ 'x'*10**9 }}", "template builds a repeated string of 1,000,000,000 characters or "
         "more (limit 25,000,000)"),
    ],
)  # fmt: skip
def test_a_template_that_can_never_render_is_refused_before_any_call(
    tmp_path: Path, body: str, said: str
) -> None:
    """Issue 29 item 5b: an input with no sample used to reach the per-test render only
    after the generation calls (exit 3); the prompt is rendered once when prepared."""
    path = tmp_path / "p.prompty"
    path.write_text(
        "---\nname: p\ninputs:\n  q:\n    type: string\n---\n"
        f"system:\nYou are a bot {body}.\n\nuser:\n{{{{q}}}}\n"
    )
    with FakeLLM(responder=PipelineResponder()) as fake:
        args = ["run", str(path), "--effort", "min", "--api-base", fake.url, "--models", "m1"]
        line = one_line([*args, "--out", str(tmp_path / "out")])
        assert fake.requests == []
    assert line == f"promptgen: error: {path}:8: {said}"


@pytest.mark.parametrize(
    ("flag", "said"),
    [
        ("--custom-metric", "promptgen: error: --custom-metric #1:2: template reaches for "
         "'__class__' on a str; templates may only use data, not Python internals"),
        ("--metric", "promptgen: error: {file}:5: --metric: template reaches for '__class__' "
         "on a str; templates may only use data, not Python internals"),
    ],
)  # fmt: skip
def test_a_judge_template_that_can_never_render_is_refused_before_any_call(
    tmp_path: Path, flag: str, said: str
) -> None:
    """Item 5b for judges: a custom metric's template refused for security used to be
    refused at every judgement, after the generation and the runs (exit 3)."""
    body = "system:\nJudge the output {{ output.__class__ }}.\n"
    value = body
    if flag == "--metric":
        metric = tmp_path / "tone.metric.prompty"
        metric.write_text("---\nname: tone\n---\n" + body)
        value = str(metric)
    with FakeLLM(responder=PipelineResponder()) as fake:
        args = ["run", SAMPLE, "--effort", "min", "--api-base", fake.url, "--models", "m1"]
        line = one_line([*args, flag, value, "--out", str(tmp_path / "out")])
        assert fake.requests == []
    assert line == said.format(file=tmp_path / "tone.metric.prompty")
