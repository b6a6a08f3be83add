"""Verdict-style templates: sections, stripping, placeholders, braces, hostile expressions,
and a cross-check against Verdict's own prompt code (in tests/tools/verdict/.venv)."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from promptgen.errors import RenderError, TemplateSecurityError
from promptgen.formats import load_prompt
from promptgen.rendering.pyformat import MissingInput
from promptgen.rendering.render import render_messages
from promptgen.rendering.verdict_template import (
    check,
    parse_template,
    previous_of,
    render,
    sections,
    variables,
)
from tests.conftest import REPO

FIXTURES = REPO / "tests" / "fixtures" / "verdict"
VERDICT_PYTHON = REPO / "tests" / "tools" / "verdict" / ".venv" / "bin" / "python"
STEPS = previous_of(
    [
        ("rubric", {"rubric": ["be exact", "be short"]}),
        ("judge", {"score": 2, "explanation": "vague"}),
        ("judge", {"score": 5, "explanation": "exact"}),
        ("judge", {"score": 4, "explanation": "fine"}),
    ]
)


# -- sections and stripping ----------------------------------------------------------------


def test_sections_strip_every_line_and_blank_ends() -> None:
    text = "@system\n\n    You grade.\n      Be fair.  \n\n@user\n   Rate {source.x}.\n\n"
    assert sections(text) == [("system", "You grade.\nBe fair.  "), ("user", "Rate {source.x}.")]


def test_text_before_the_first_section_is_the_user_message() -> None:
    assert sections("  Is it polite?\n@system\nYou check tone.\n") == [
        ("system", "You check tone."),
        ("user", "Is it polite?"),
    ]
    assert sections("No sections at all:\n   {source.x}\n") == [
        ("user", "No sections at all:\n{source.x}")
    ]


def test_leading_text_is_dropped_with_a_warning_when_user_is_given() -> None:
    parsed = parse_template("Notes for authors.\n@user\nHi {source.x}\n", first_line=5)
    assert [(s.role, s.content, s.line) for s in parsed.sections] == [("user", "Hi {source.x}", 7)]
    assert parsed.warnings == [
        "line 5: the text before the first section is dropped because an @user section is "
        "given (as Verdict does)"
    ]


def test_no_format_keeps_whitespace_everywhere() -> None:
    parsed = parse_template("@system\n  Indented.\n@no_format\n@user\n  Keep\n    this\n")
    assert parsed.no_format
    assert sections("@system\n  Indented.\n@no_format\n@user\n  Keep\n    this\n") == [
        ("system", "\n  Indented.\n"),
        ("user", "\n  Keep\n    this"),  # Verdict's `$` stops before the final newline
    ]


def test_sections_inline_and_second_section_wins() -> None:
    assert sections("@system You are terse. @user Rate it.") == [
        ("system", "You are terse. "),
        ("user", "Rate it."),
    ]
    parsed = parse_template("@user\nfirst\n@user\nsecond\n")
    assert [s.content for s in parsed.sections] == ["second"]
    assert parsed.warnings == ["line 3: a second @user section replaces the first one"]


def test_email_addresses_and_other_at_words_stay_text() -> None:
    # Verdict would cut the prompt at "@example" and at "@assistant".
    text = "@user\nWrite to bob@example.com or @support.\n@assistant is not a section.\n"
    assert sections(text) == [
        ("user", "Write to bob@example.com or @support.\n@assistant is not a section.")
    ]
    assert sections("@username stays @users\n") == [("user", "@username stays @users")]


def test_a_template_without_a_user_message_is_an_error() -> None:
    with pytest.raises(RenderError, match="no @user section and no text before"):
        parse_template("\n@system\nOnly a system message.\n")


# -- placeholders ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("{source.reply}", "Thanks!"),
        ("{input.reply}", "Thanks!"),
        ('{source["reply"].upper()}', "THANKS!"),
        ("{previous.rubric.rubric}", "['be exact', 'be short']"),
        ("{previous.judge[2].score}", "4"),
        ("{previous.judge[0].explanation}", "vague"),
        ("{[j.score for j in previous.judge]}", "[2, 5, 4]"),
        ("{sum(j.score for j in previous.judge) / len(previous.judge)}", "3.6666666666666665"),
        ('{"\\n".join(str(i + 1) + ". " + c for i, c in enumerate(previous.rubric.rubric))}',
         "1. be exact\n2. be short"),
        ('{"\\n".join(f"{i+1}. {item}" for i, item in enumerate(previous.rubric.rubric))}',
         "1. be exact\n2. be short"),
        ('{source.reply + "}"} {f"{source.count:>3}|{source.reply!r}"}', "Thanks!}   3|'Thanks!'"),
        ("{unit.scale} / {unit.choices[-1]}", "1 to 5 / 5"),
        ("{source.count * 2} {source.flag} {source.missing_ok is None}", "6 True True"),
    ],
)  # fmt: skip
def test_each_placeholder_form(template: str, expected: str) -> None:
    values = {"reply": "Thanks!", "count": 3, "flag": True, "missing_ok": None}
    unit = {"scale": "1 to 5", "choices": [1, 2, 3, 4, 5]}
    assert render(template, values, previous=STEPS, unit=unit) == expected


def test_previous_of_one_step_reads_its_fields_directly() -> None:
    one = previous_of([("rubric", {"rubric": ["a", "b"], "note": "n"})])
    assert render("{previous.rubric} {previous.note}", {}, previous=one) == "['a', 'b'] n"
    named = previous_of([("criteria", {"list": ["x"]})])
    assert render("{previous.criteria.list} {previous.list}", {}, previous=named) == "['x'] ['x']"


def test_doubled_braces_are_sent_as_written() -> None:
    text = 'JSON like {{"grade": 3}}; {{source.x}} stays; {source.x} goes.'
    assert render(text, {"x": "X"}) == 'JSON like {{"grade": 3}}; {{source.x}} stays; X goes.'
    assert variables(text) == ["x"]


def test_variables_are_the_names_read_off_source_and_input() -> None:
    text = "{source.reply} {input.topic} {len(source.reply)} {input['extra']} {previous.x}"
    assert variables(text) == ["reply", "topic", "extra"]


def test_a_missing_input_raises_or_stays_when_not_strict() -> None:
    with pytest.raises(MissingInput) as info:
        render("line one\n{source.reply}", {})
    assert (info.value.name, info.value.line) == ("reply", 2)
    with pytest.raises(MissingInput, match="previous"):
        render("{previous.rubric}", {})
    assert render("{source.reply} {previous.x} {source.y}", {"y": 1}, strict=False) == (
        "{source.reply} {previous.x} 1"
    )


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("{source.__class__}", "placeholder {source.__class__} refused: names starting with _"),
        ("{().__class__.__bases__}", "refused: names starting with _ are not allowed"),
        ("{2 ** 10 ** 10}", "refused: 2 ** 10000000000 is too large (over 100,000 bits)"),
        ("{'x' * 10 ** 9}", "refused: a sequence of 1,000,000,000 items"),
        ("{sum(range(10 ** 9))}", "refused: range of 1,000,000,000 items (at most 100,000)"),
        ("{len([1 for a in range(9999) for b in range(9999)])}",
         "refused: comprehension generates too many elements"),
        ("{" + "[" * 150 + "1" + "]" * 150 + "}", "refused: expression nested"),
        ("{open('/etc/passwd')}", "refused: function 'open' is not allowed"),
        ("{source.x.format_map(source)}", "refused: this method is not available"),
        ('{f"{source.__class__}"}', 'placeholder {f"{source.__class__}"} refused: names starting'),
        ('{f"{source.x:>{10 ** 9}}"}', "refused: a format width over 1,000,000 characters"),
        ('{"-".join(f"{__import__(1)}" for c in "ab")}', "refused: names starting with _"),
    ],
)  # fmt: skip
def test_hostile_placeholders_are_refused_in_one_line(template: str, message: str) -> None:
    with pytest.raises(TemplateSecurityError) as info:
        render(template, {"x": "a"})
    text = info.value.one_line()
    assert message in text and "\n" not in text


def test_plain_mistakes_are_template_errors_with_a_hint() -> None:
    with pytest.raises(RenderError) as info:
        check('Answer as {"grade": 3}.')
    assert not isinstance(info.value, TemplateSecurityError)
    assert info.value.one_line() == (
        'placeholder {"grade": 3}: not a Python expression (Verdict evaluates every {...} as a '
        "Python expression over source, input, previous and unit; there is no escape for "
        "literal braces)"
    )
    with pytest.raises(RenderError, match=r"name 'reply' is not defined .*write \{source.reply\}"):
        check("line\n{reply}")


DOCUMENTED = (  # Verdict's own documented rubric form (../shared/reference/peers.md)
    '{"\\n".join(f"{i+1}. {x}" for i,x in enumerate(previous.rubric))}'
)


def test_a_placeholder_is_one_python_expression_with_its_own_braces() -> None:
    previous = previous_of([("rubric", {"rubric": ["Is it correct?", "Is it brief?"]})])
    text = f"Criteria:\n{DOCUMENTED}\nAnswer: {{source.output}}"
    assert variables(text) == ["output"]
    assert render(text, {"output": "Paris."}, previous=previous) == (
        "Criteria:\n1. Is it correct?\n2. Is it brief?\nAnswer: Paris."
    )
    # braces that are not one expression stay text, as Verdict leaves them
    literal = 'Answer as {"grade": {"x": 1}} or {{"grade": 3}} or {{source.x}}; {source.x}'
    assert variables(literal) == ["x"]
    assert render(literal, {"x": "X"}) == (
        'Answer as {"grade": {"x": 1}} or {{"grade": 3}} or {{source.x}}; X'
    )
    with pytest.raises(RenderError) as info:
        check('line\n{"-".join(f"{i}" for j in "ab")}')
    assert info.value.line == 2
    assert info.value.one_line() == (
        'placeholder {"-".join(f"{i}" for j in "ab")}: name \'i\' is not defined '
        "(a Verdict template reads source, input, previous, unit; write {source.i} for an input)"
    )


def test_many_unclosed_braces_are_scanned_in_bounded_time() -> None:
    text = "{a" * 50_000 + " {source.x}"
    started = time.monotonic()
    assert render(text, {"x": "X"}).endswith("{a{a X")
    assert time.monotonic() - started < 5


# -- through the loader and render.py -----------------------------------------------------------


def test_a_verdict_file_loads_and_renders_through_render_py(tmp_path: Path) -> None:
    path = tmp_path / "tone.verdict.md"
    path.write_text(
        "---\nname: tone\ninputs:\n  reply: {type: string, default: Hi}\n---\n"
        "@system\n   You check tone.\n@user\n   Is this polite? {source.reply}\n   {{x}}\n"
    )
    prompt = load_prompt(path)
    assert (prompt.format, prompt.template_engine, prompt.name) == ("verdict", "verdict", "tone")
    assert [(m.role, m.content, m.line) for m in prompt.messages] == [
        ("system", "You check tone.", 7),
        ("user", "Is this polite? {source.reply}\n{{x}}", 9),
    ]
    assert list(prompt.inputs) == ["reply"] and not prompt.inputs["reply"].detected
    assert prompt.warnings == [
        f"{path}:10: '{{{{' is sent as written (Verdict has no brace escapes; a placeholder "
        "inside it is not evaluated)",
        f"{path}:10: '}}}}' is sent as written (Verdict has no brace escapes; a placeholder "
        "inside it is not evaluated)",
    ]
    assert render_messages(prompt, {"reply": "Go away."}) == [
        {"role": "system", "content": "You check tone."},
        {"role": "user", "content": "Is this polite? Go away.\n{{x}}"},
    ]
    with pytest.raises(RenderError) as info:
        render_messages(prompt.model_copy(update={"inputs": {}}), {})
    assert info.value.one_line() == (
        f"{path}:9: missing input 'reply' (declare a default for 'reply' in the frontmatter, "
        "or pass a value)"
    )


def test_a_template_reading_no_input_gets_one() -> None:
    prompt = load_prompt(FIXTURES / "unit.verdict.md")
    assert list(prompt.inputs) == ["output"]
    path = FIXTURES.parent.parent / "fixtures" / "verdict" / "braces.verdict.md"
    assert list(load_prompt(path).inputs) == ["text"]


def test_hostile_file_is_one_line_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.verdict.md"
    path.write_text("@system\nYou judge.\n@user\nRate it.\n{2 ** 10 ** 10}\n")
    with pytest.raises(TemplateSecurityError) as info:
        load_prompt(path)
    assert info.value.one_line() == (
        f"{path}:5: placeholder {{2 ** 10 ** 10}} refused: 2 ** 10000000000 is too large "
        "(over 100,000 bits)"
    )


# -- the cross-check with Verdict's own code ------------------------------------------------------


def _promptgen(name: str, case: dict[str, Any]) -> dict[str, Any]:
    prompt = load_prompt(FIXTURES / f"{name}.verdict.md")
    steps = case.get("previous")
    previous = previous_of([(n, o) for n, o in steps]) if steps else None
    out: dict[str, Any] = {"system": None, "user": None}
    for message in prompt.messages:
        out[message.role] = render(
            message.content, case["source"], previous=previous, unit=case.get("unit")
        )
    return out


def _plain_previous(case: dict[str, Any]) -> Any:
    steps = case.get("previous")
    if not steps:
        return None
    record = previous_of([(n, o) for n, o in steps])
    return json.loads(json.dumps(record, default=lambda r: dict(r)))


@pytest.mark.skipif(
    not VERDICT_PYTHON.exists(), reason="run tests/tools/install_verdict.sh for the cross-check"
)
def test_every_fixture_renders_as_verdict_renders_it() -> None:
    cases = json.loads((FIXTURES / "cases.json").read_text())
    names = sorted(p.name.removesuffix(".verdict.md") for p in FIXTURES.glob("*.verdict.md"))
    assert names == sorted(cases)
    differences = {  # where promptgen deliberately differs (docs/formats.md)
        "email": "@user\nWrite to bob@example.com about {source.text}\n",
        "replace": "@user\n{source.text} and {{source.text}}\n",
    }
    batch = [{"template": t, "source": {"text": "Fine work."}} for t in differences.values()]
    # Verdict's documented rubric form: its own regex splits it at the f-string's braces and
    # fails on {i+1}; promptgen reads it as one expression, as the document shows it
    rubric = (FIXTURES / "rubric.verdict.md").read_text()
    documented = rubric.replace(rubric.splitlines()[4], DOCUMENTED)
    assert documented != rubric
    batch.append(
        {
            "template": documented,
            "source": cases["rubric"]["source"],
            "previous": _plain_previous(cases["rubric"]),
        }
    )
    batch += [
        {
            "template": (FIXTURES / f"{name}.verdict.md").read_text(),
            "source": cases[name]["source"],
            "previous": _plain_previous(cases[name]),
            "unit": cases[name].get("unit"),
        }
        for name in names
    ]
    done = subprocess.run(
        [str(VERDICT_PYTHON), str(REPO / "tests" / "tools" / "verdict" / "render.py")],
        input=json.dumps(batch),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    answers = json.loads(done.stdout)
    assert answers[:2] == [
        {"system": None, "user": "Write to bob"},  # Verdict cuts at "@example"
        {"system": None, "user": "Fine work. and {Fine work.}"},  # its str.replace reaches in
    ]
    assert [sections(t) for t in differences.values()] == [
        [("user", "Write to bob@example.com about {source.text}")],
        [("user", "{source.text} and {{source.text}}")],
    ]
    assert render("{source.text} and {{source.text}}", {"text": "Fine work."}) == (
        "Fine work. and {{source.text}}"
    )
    assert answers[2]["error"].startswith(
        "PromptError: \nFailed to evaluate Prompt placeholder 'i+1'"
    )
    theirs = dict(zip(names, answers[3:], strict=True))
    steps = previous_of([(n, o) for n, o in cases["rubric"]["previous"]])
    ours = {
        role: render(content, cases["rubric"]["source"], previous=steps)
        for role, content in sections(documented)
    }
    assert ours == {
        "system": "You grade against criteria.",
        "user": "Criteria:\n1. Is it correct?\n2. Is it brief?\n"
        "Answer to grade: Paris is the capital.\nCriteria count: 2",
    }
    assert ours == theirs["rubric"]  # the same text as Verdict gives for its str() form
    for name in names:
        assert _promptgen(name, cases[name]) == theirs[name], name
    # what the fixtures show, in values
    assert theirs["leading"] == {
        "system": "You check tone.",
        "user": "Is this reply polite? Thanks, happy to help.\nSay yes or no.",
    }
    assert theirs["no_format"]["user"] == (
        "\n  Keep the indentation of:\n    def f():\n    return 1\n"
    )
    assert theirs["named"]["user"].splitlines()[:3] == [
        "Third score: 4",
        "All scores: 2, 5, 4",
        "Best: 5",
    ]
    assert theirs["braces"]["user"] == (
        'Answer as JSON like {{"grade": 3}}.\nText: Fine work.\nLeft alone: {{source.note}}'
    )
