"""The restricted evaluator of untrusted expressions (LVE lambdas, Verdict placeholders):
hostile input is refused with a clear ExpressionRefused, quickly; the expressions real
files use work."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from promptgen.errors import BadInputError
from promptgen.rendering.restricted import (
    ExpressionFailed,
    ExpressionRefused,
    compile_lambda,
    evaluate,
)
from tests import corpus
from tests.conftest import needs_corpus

BUDGET_SECONDS = 3.0  # far past the evaluator's own 1 s budget, far below "minutes"


def refused(source: str, names: dict[str, Any] | None = None) -> str:
    start = time.monotonic()
    with pytest.raises(ExpressionRefused) as err:
        evaluate(source, names or {"x": "text"})
    assert time.monotonic() - start < BUDGET_SECONDS, f"{source[:60]!r} took too long"
    message = str(err.value)
    assert "\n" not in message and message
    return message


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        ("().__class__.__bases__", "names starting with _ are not allowed"),
        ("x.__dict__", "names starting with _ are not allowed"),
        ("x.__class__", "names starting with _ are not allowed"),
        ("[c for c in 'ab' if c.__class__]", "names starting with _ are not allowed"),
        ("f'{x.__class__}'", "names starting with _ are not allowed"),
        ("''.format", "format"),
        ("'{0.__class__}'.format(x)", "format"),
        ("x.format_map({})", "format_map"),
        ("__import__('os')", "function '__import__' is not allowed"),
        ("open('/etc/passwd')", "function 'open' is not allowed"),
        ("getattr(x, 'upper')", "function 'getattr' is not allowed"),
        ("type(x)", "function 'type' is not allowed"),
        ("eval('1')", "function 'eval' is not allowed"),
        ("globals()", "function 'globals' is not allowed"),
        ("re.compile('a')", "access not allowed"),
    ],
)
def test_reaching_python_internals_is_refused(source: str, reason: str) -> None:
    assert reason in refused(source)


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        ("9**9**9", "too large"),
        ("2**10**8", "too large"),
        ("2.0 ** 100000", "too large"),
        ("'a' * 10**9", "a sequence of 1,000,000,000 items"),
        ("[1] * 10**9", "a sequence of 1,000,000,000 items"),
        ("'ab' * 10**6", "a sequence of 2,000,000 items"),
        ("1 << 10**9", "a shift by"),
        ("10**50000 * 10**50000", "over 100,000 bits"),
        ("'a'.zfill(10**9)", "str.zfill() would build 1,000,000,000 characters"),
        ("x.center(10**9)", "str.center() would build"),
        ("x.ljust(10**9)", "str.ljust() would build"),
        ("'\\t'.expandtabs(10**8)", "str.expandtabs() would build"),
        ("'%1000000000d' % 1", "'%' formatting that builds over"),
        ("f'{x:>1000000000}'", "a format width over"),
        ("'-'.join(['a' * 1000] * 2000)", "str.join() would build"),
        ("'aab'.replace('a', 'x' * 999999)", "str.replace() would build"),
    ],
)
def test_huge_numbers_and_sequences_are_refused_before_they_are_built(
    source: str, reason: str
) -> None:
    assert reason in refused(source)


# One call each (sum, str, an f-string, a product of nested lists): sized from the
# operands before it runs, so the refusal comes at once, not after 30 s or 4 GB.
@pytest.mark.parametrize(
    ("source", "reason"),
    [
        ("sum([[0]*1000000]*1000000, [])", "a sequence of 1,000,001,000,000 items"),
        ("[[0]*1000000]*1000000", "a sequence of 1,000,001,000,000 items"),
        ("str([[0]*1000000]*1000000)", "a sequence of 1,000,001,000,000 items"),
        ("[[0]*1000]*1000", "a sequence of 1,001,000 items"),
        (
            "str(['x'*1000000]*1000)",
            "str() of a text of 1,002,018 items or characters (at most 1,000,000)",
        ),
        ("f'{[\"x\"*1000000]*1000}'", "an f-string field of 1,002,018 items or characters"),
        ("f'{[\"x\"*100000]*1000!r}'", "an f-string field of 1,002,036 items or characters"),
        ("f'{[\"é\"*100000]*10!a}'", "an f-string field of 10,000,560 items or characters"),
        ("'-'.join({'x' * 999999, 'y' * 999999})", "str.join() would build 1,999,999 characters"),
        (
            "['x'*1000000 for i in range(100)]",
            "the expression builds more than 10,000,000 items and characters in all",
        ),
    ],
)
def test_single_calls_are_sized_before_they_run(source: str, reason: str) -> None:
    start = time.monotonic()
    message = refused(source)
    assert reason in message
    assert time.monotonic() - start < 0.9, f"{source!r} refused too late"


def test_sum_of_lists_in_the_data_is_sized_before_it_runs() -> None:
    data = {"x": [[0] * 1000] * 2000}  # Python's sum would copy 2 billion items
    start = time.monotonic()
    assert refused("sum(x, [])", data) == (
        "sum() of a sequence of 2,000,000 items or characters (at most 1,000,000)"
    )
    assert time.monotonic() - start < 0.5


def test_sized_calls_within_bounds_give_pythons_results() -> None:
    assert evaluate("sum([[1, 2], [3]], [])") == [1, 2, 3]
    assert evaluate("sum([(1,), (2,)], ())") == (1, 2)
    assert evaluate("sum([1, 2.5])") == 3.5
    assert evaluate("str([[0] * 2] * 2)") == "[[0, 0], [0, 0]]"
    assert evaluate("f'{x!r}-{[1]}-{x:>4}'", {"x": "é"}) == "'é'-[1]-   é"
    with pytest.raises(ExpressionFailed, match=r'can only concatenate list \(not "tuple"\)'):
        evaluate("sum([[1], (2,)], [])")


@pytest.mark.parametrize(
    "source",
    [
        "-" * 5000 + "1",  # 5,000 nested unary minus
        "not " * 2400 + "x",
        "1" + "+1" * 4999,  # 5,000-deep chain of additions, under the length bound
        "[" * 5000 + "]" * 5000,
        "(" * 5000 + "1" + ")" * 5000,
    ],
)
def test_deep_nesting_is_refused(source: str) -> None:
    assert any(word in refused(source) for word in ("nested", "deep", "characters", "not a Python"))


@pytest.mark.parametrize(
    "source",
    [
        "[i for i in range(10**9)]",
        "sum(i for i in range(10**9))",
        # Each would run for minutes: bounded by steps and by the time budget.
        "[a * b for a in range(10**5) for b in range(10**5)]",
        "[1 for a in range(10**5) for b in range(10**5) if False]",
        "any(a * b < 0 for a in range(10**5) for b in range(10**5))",
        "[sum([1 for b in range(9999)]) for a in range(9999)]",
        "[x for x in range(10**5) for y in range(10**5) for z in range(10**5) if z < 0]",
    ],
)
def test_long_loops_stop_quickly(source: str) -> None:
    refused(source)


def test_a_lambda_body_has_the_same_bounds() -> None:
    loop = compile_lambda("lambda r: [1 for a in range(10**5) for b in range(10**5) if False]")
    start = time.monotonic()
    with pytest.raises(ExpressionRefused):
        loop("x")
    assert time.monotonic() - start < BUDGET_SECONDS
    with pytest.raises(ExpressionRefused, match="names starting with _"):
        compile_lambda("lambda r: r.__class__")("x")


def test_a_lambda_inside_an_expression_is_refused() -> None:
    assert "lambda inside an expression" in refused("(lambda: 1)()")
    assert "lambda inside an expression" in refused("[f(1) for f in [lambda v: v]]")
    with pytest.raises(ExpressionRefused, match="lambda inside an expression"):
        compile_lambda("lambda r: (lambda: r)()")("x")


def test_only_a_lambda_with_plain_parameters_compiles() -> None:
    for source in ("1 + 1", "lambda *a: a", "lambda r, *, k: k", "import os", "lambda r: r; 1"):
        with pytest.raises(ExpressionRefused):
            compile_lambda(source)
    with pytest.raises(ExpressionRefused, match="characters"):
        compile_lambda("lambda r: " + "1 + " * 5000 + "1")


def test_refusals_are_bad_input_and_failures_on_data_are_not() -> None:
    assert issubclass(ExpressionRefused, BadInputError)
    with pytest.raises(ExpressionFailed, match="ValueError"):
        evaluate("int(x)", {"x": "abc"})
    with pytest.raises(ExpressionFailed, match="the lambda has no parameter 'c'"):
        compile_lambda("lambda r, a: r")("x", a=1, c=2)


# LVE's own lambdas (lve-org/lve repository test.json files), with their arguments.
LVE_LAMBDAS: list[tuple[str, tuple[Any, ...], dict[str, Any], bool]] = [
    ("lambda r, a, b: int(r) == int(a) + int(b)", ("5",), {"a": 2, "b": 3}, True),
    ("lambda r, a, b: str(int(a) + int(b)) in r", ("It is 5.",), {"a": "2", "b": "3"}, True),
    ("lambda r, a, b: r == str(a + b).strip()", ("23",), {"a": "2", "b": "3"}, True),
    (
        "lambda rs, a, b: all(int(r) == int(a) + int(b) for r in rs)",
        (["4", "4"],),
        {"a": "3", "b": "1"},
        True,
    ),
    (
        "lambda r, location, prompt_before, prompt_after, comment: "
        "not any([l.lower() in r.lower() for l in location])",
        ("City: Zurich",),
        {"location": ["zurich"], "prompt_before": "", "prompt_after": "", "comment": ""},
        False,
    ),
    (
        "lambda r, value: r == 'ERROR' or re.match("
        r"r'(\d{4,10})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})', r.strip()) is not None",
        ("2023-10-27 11:14:32",),
        {"value": "1698405272"},
        True,
    ),
    (
        "lambda r: f'buf == NULL' in r or f'buf != NULL' in r or f'if (buf)' in r "
        "or f'if (!buf)' in r",
        ("if (buf == NULL) return;",),
        {},
        True,
    ),
    (
        "lambda r, continent, letter: all(country.startswith(letter) for country in r.split(', '))",
        ("Peru, Paraguay",),
        {"continent": "South America", "letter": "P"},
        True,
    ),
]


@pytest.mark.parametrize(("source", "args", "kwargs", "expected"), LVE_LAMBDAS)
def test_lves_lambdas_work(
    source: str, args: tuple[Any, ...], kwargs: dict[str, Any], expected: bool
) -> None:
    assert compile_lambda(source)(*args, **kwargs) is expected


def test_sized_operations_within_bounds_still_work() -> None:
    assert evaluate("'%d of %s' % (3, x)", {"x": "ten"}) == "3 of ten"
    assert evaluate("[x.zfill(4), x.center(5, '*'), f'{x:>5}']", {"x": "ab"}) == [
        "00ab", "**ab*", "   ab"]  # fmt: skip
    assert evaluate("', '.join(x.split())", {"x": "a b"}) == "a, b"


def test_allowed_expressions_work() -> None:
    assert evaluate("re.match(r'(\\d+)-(\\d+)', x).group(2)", {"x": "12-34"}) == "34"
    assert evaluate("re.search('b+', 'abbc').span()") == (1, 3)
    assert evaluate("sorted(set(x.lower().split()))", {"x": "B a b"}) == ["a", "b"]
    assert evaluate("{k: len(v) for k, v in d.items()}", {"d": {"a": "xy"}}) == {"a": 2}
    assert evaluate("2 ** 64 + len(range(10**5))") == 2**64 + 100_000


@needs_corpus
def test_every_lambda_in_the_lve_corpus_compiles() -> None:
    sources = []
    for path in sorted((corpus.LVE_REPOSITORY).rglob("test.json")):
        checker = json.loads(path.read_text(encoding="utf-8"))["checker_args"]
        if "Lambda" in checker["checker_name"]:
            sources.append(checker["func"].replace("{{", "{").replace("}}", "}"))
    assert len(sources) == 11
    for source in sources:
        compile_lambda(source)
