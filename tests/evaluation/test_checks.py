"""Every deterministic check, passing and failing, and how checks are written."""

from __future__ import annotations

import time

import pytest

from promptgen.bounds import REGEX_TIMEOUT_SECONDS
from promptgen.errors import BadInputError
from promptgen.evaluation.check_metric import check_name
from promptgen.evaluation.parse import parse_check

CASES = [
    # (check as written, output that passes, output that fails)
    ({"equals": "positive"}, "positive\n", "negative"),
    ({"equals": {"a": 1}}, '{"a": 1}', '{"a": 2}'),
    ({"contains": "Summary -"}, "Summary - a fox", "A fox"),
    ({"icontains": "summary"}, "SUMMARY: x", "nothing"),
    ({"contains-any": ["cat", "dog"]}, "a dog", "a bird"),
    ({"icontains-any": ["CAT", "DOG"]}, "a dog", "a bird"),
    ({"contains-all": ["cat", "dog"]}, "cat and dog", "cat only"),
    ({"icontains-all": ["Cat", "Dog"]}, "CAT and DOG", "cat only"),
    ({"starts-with": "Dear"}, "Dear Ann,", "Hi Ann"),
    ({"istarts-with": "dear"}, "DEAR Ann", "Hi Ann"),
    ({"ends-with": "Regards"}, "... Regards", "... Bye"),
    ({"iends-with": "regards"}, "... REGARDS", "... Bye"),
    ({"regex": "^[A-Z]+$"}, "ABC", "abc"),
    ({"regex": {"pattern": "^abc$", "flags": "im"}}, "x\nABC", "xyz"),
    ({"is-json": True}, '{"ok": true}', "{nope"),
    (
        {"is-json": {"type": "object", "required": ["name"]}},
        '{"name": "x"}',
        '{"other": 1}',
    ),
    ({"word-count": {"min": 2, "max": 4}}, "three short words", "one"),
    ({"line-count": {"max": 2}}, "a\nb", "a\nb\nc"),
    ({"sentence-count": {"equals": 2}}, "One. Two!", "One."),
    ({"paragraph-count": {"min": 2}}, "a\n\nb", "a\nb"),
    ({"character-count": {"max": 5}}, "abcde", "abcdef"),
    (
        {"language": "fr"},
        "Bonjour, je voudrais réserver une table pour deux personnes ce soir.",
        "Hello, I would like to book a table for two people tonight.",
    ),
    (
        {"levenshtein": {"value": "kitten", "threshold": 3}},
        "sitting",
        "a completely different text",
    ),
    ({"not-contains": "sorry"}, "Here you go", "I'm sorry"),
    ({"not-regex": "\\d"}, "no digits", "4 digits"),
    ("contains=Hello", "Hello world", "Bye"),
]


@pytest.mark.parametrize(("spec", "good", "bad"), CASES, ids=lambda v: str(v)[:30])
def test_check_passes_and_fails(spec: object, good: str, bad: str) -> None:
    check = parse_check(spec)
    assert check.evaluate(good).passed, check.evaluate(good).reason
    result = check.evaluate(bad)
    assert not result.passed and result.reason


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"shouts": "x"}, "unknown check"),
        ({"regex": "("}, "does not compile"),
        ({"regex": {"pattern": "a", "flags": "z"}}, "flags"),
        ({"word-count": {}}, "needs min, max or equals"),
        ("contains", "NAME=VALUE"),
        ({"a": 1, "b": 2}, "one {name: arguments}"),
        ({"levenshtein": {"value": "x", "oops": 1}}, "wrong arguments"),
        ({"regex": 5}, "needs a text pattern"),
        ({"is-json": {"type": 5}}, "not a valid JSON Schema"),
        ({"contains": "x", "label": "y"}, "one {name: arguments}"),
    ],
)
def test_bad_checks_are_clear_errors(spec: object, message: str) -> None:
    with pytest.raises(BadInputError, match=message):
        parse_check(spec)


def test_counts_report_a_score() -> None:
    result = parse_check({"word-count": {"max": 10}}).evaluate("one two three")
    assert result.passed and result.score == 3.0


def test_catastrophic_regex_times_out_as_a_failed_check() -> None:
    check = parse_check("regex=(a|aa)+$")
    started = time.monotonic()
    result = check.evaluate("a" * 60 + "b")
    assert time.monotonic() - started < REGEX_TIMEOUT_SECONDS + 5
    assert not result.passed
    assert result.reason == f"timed out after {REGEX_TIMEOUT_SECONDS:g} s on /(a|aa)+$/"
    assert parse_check("regex=(a|aa)+$").evaluate("aaaa").passed  # fine on short text


@pytest.mark.parametrize("spec", [{"is-json": True}, {"equals": {"a": 1}}])
def test_deeply_nested_json_output_fails_the_check_not_the_run(spec: object) -> None:
    for output in ("[" * 100_000 + "]" * 100_000, "[" * 150 + "]" * 150, "9" * 5000):
        result = parse_check(spec).evaluate(output)
        assert not result.passed and result.reason


def test_a_check_may_carry_its_name() -> None:
    spec = {"icontains": "refund", "name": "mentions the refund"}
    assert parse_check(spec).evaluate("A REFUND").passed
    assert check_name(spec) == "mentions the refund"
    assert check_name({"icontains": "refund"}) == "icontains=refund"
    assert check_name({"a": 1, "b": 2}) == "{'a': 1, 'b': 2}"  # not a check: named as is


def test_a_command_line_placeholder_is_text_not_yaml() -> None:
    """`--check "equals={{expected}}"`: a placeholder, filled per test, not a YAML mapping."""
    from promptgen.evaluation.check_metric import fill_placeholders

    assert parse_check("equals={{expected}}") is not None
    spec, missing = fill_placeholders("icontains={{expected}}", {"expected": "Paris"})
    assert missing == [] and parse_check(spec).evaluate("It is paris.").passed
    assert parse_check("word-count={max: 3}").evaluate("one two three four").passed is False
