"""The Verdict template loader: frontmatter, judge keys (normalised, or one error line
with its line), detection by name and content, and `promptgen inspect` on bad files."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from promptgen.errors import PromptFormatError, RenderError
from promptgen.formats import load_prompt
from tests.conftest import run_cli

Write = Callable[[str, str], Path]

JUDGE = """---
name: helpful
description: How helpful the answer is.
model:
  id: gpt-4o-mini
  parameters: {temperature: 0.7}
inputs:
  question: {type: string, description: What the user asked.}
scale: 1-5
explanation: true
judges: 3
pool: mean
pass: 4
rubric:
  name: criteria
  count: 3
  template: |
    @system
    You write grading criteria.
    @user
    Three criteria for answers to: {source.question}
owner: docs team
---
@system
You grade answers.
@user
{previous.criteria.rubric}
Question: {source.question}
Answer: {source.output}
"""


def test_a_judge_template_loads_with_its_keys_normalised(write: Write) -> None:
    path = write("helpful.verdict.md", JUDGE)
    prompt = load_prompt(path)
    assert (prompt.name, prompt.format, prompt.template_engine) == ("helpful", "verdict", "verdict")
    assert (prompt.model.id, prompt.model.parameters) == ("gpt-4o-mini", {"temperature": 0.7})
    assert {n: (i.detected, i.description) for n, i in prompt.inputs.items()} == {
        "question": (False, "What the user asked."),
        "output": (True, None),
    }
    assert [(m.role, m.line) for m in prompt.messages] == [("system", 25), ("user", 27)]
    assert prompt.extra == {
        "owner": "docs team",
        "verdict": {
            "scale": {"kind": "discrete", "min": 1, "max": 5},
            "explanation": True,
            "judges": 3,
            "pool": "mean",
            "pass": 4,
            "rubric": {
                "name": "criteria",
                "count": 3,
                "fields": {"rubric": "list"},
                "messages": [
                    {"role": "system", "content": "You write grading criteria.",
                     "attributes": {}, "line": 19},
                    {"role": "user", "content": "Three criteria for answers to: {source.question}",
                     "attributes": {}, "line": 21},
                ],
            },
        },
    }  # fmt: skip
    assert prompt.warnings == [
        f"{path}:22: frontmatter key 'owner' is not read in a Verdict template; kept as is"
    ]


@pytest.mark.parametrize(
    ("front", "line", "message"),
    [
        ("scale: 5-1", 2, "frontmatter: scale '5-1' runs from high to low"),
        ("scale: often", 2, "frontmatter: cannot read scale 'often'"),
        ("judges: 3", 2, "frontmatter: 'judges' needs a 'scale'"),
        ("scale: 1-5\njudges: 99", 3, "frontmatter: 'judges' should be a whole number from 1 "
         "to 10, got 99"),
        ("scale: [yes, no]\npool: mean", 3, "frontmatter: 'pool: mean' cannot average categories"),
        ("scale: 1-5\npool: median", 3, "frontmatter: 'pool' should be mean or max, got 'median'"),
        ("scale: 1-5\npass: 9", 3, "frontmatter: 'pass' should be a score from 1 to 5, got 9"),
        ("scale: [yes, no]\npass: maybe", 3, "frontmatter: 'pass' should name categories of the "
         "scale, got 'maybe'"),
        ("scale: 1-5\nrubric: {count: 2}", 3, "frontmatter: 'rubric' needs a template"),
        ("scale: 1-5\nrubric: {template: '@user x {source.q}', fields: {values: list}}", 3,
         "frontmatter: 'rubric.fields' should map field names to string, list, integer, "
         "number, boolean"),
    ],
)  # fmt: skip
def test_bad_judge_keys_are_one_line_with_their_line(
    write: Write, front: str, line: int, message: str
) -> None:
    path = write("j.verdict.md", f"---\n{front}\n---\n@user\nRate {{source.output}}\n")
    with pytest.raises(PromptFormatError) as info:
        load_prompt(path)
    assert info.value.one_line().startswith(f"{path}:{line}: {message}")


def test_a_bad_rubric_template_names_its_file_line(write: Write) -> None:
    path = write(
        "j.verdict.md",
        "---\nscale: 1-5\nrubric: |\n  @user\n  Criteria for {source.q.__class__}\n---\n"
        "@user\n{source.output}\n",
    )
    with pytest.raises(RenderError) as info:
        load_prompt(path)
    assert info.value.one_line() == (
        f"{path}:5: placeholder {{source.q.__class__}} refused: names starting with _ are "
        "not allowed"
    )


def test_detected_by_name_and_by_content(write: Write) -> None:
    by_content = write("judge.md", "# notes\n@system\nYou grade.\n@user\nGrade {source.answer}\n")
    prompt = load_prompt(by_content)
    assert prompt.format == "verdict"
    assert [(m.role, m.content) for m in prompt.messages] == [
        ("system", "You grade."),
        ("user", "Grade {source.answer}"),
    ]
    plain = write("plain.verdict.txt", "Summarise {source.text} in one line.\n")
    assert [(m.role, m.content) for m in load_prompt(plain).messages] == [
        ("user", "Summarise {source.text} in one line.")
    ]
    bare = write("bare.verdict.md", "@user\nSay hello.\n")
    assert [(m.role, m.content) for m in load_prompt(bare).messages] == [
        ("user", "Say hello."),
        ("user", "{source.input}"),
    ]


def test_inspect_refuses_a_hostile_template_in_one_line(write: Write) -> None:
    path = write("bad.verdict.md", "@system\nYou judge.\n@user\nRate {source.x.__class__}\n")
    result = run_cli("inspect", str(path))
    assert result.returncode == 2
    assert result.stderr == (
        f"promptgen: error: {path}:4: placeholder {{source.x.__class__}} refused: names "
        "starting with _ are not allowed\n"
    )
    slow = write("slow.verdict.md", "@user\n{sum(range(10 ** 12))} {source.x}\n")
    result = run_cli("inspect", str(slow))
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert "refused: range of 1,000,000,000,000 items (at most 100,000)" in result.stderr
