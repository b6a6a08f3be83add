"""Property-based fuzzing of the option parser: any value, for any option, through the
code the command line uses, is either accepted (and then the options are valid) or
refused with a BadInputError of one line. Nothing else escapes.

Layers fuzzed: `options_from_flags` (typed flag values, as Typer hands them over),
`parse_params`, `resolve_options` (flags, frontmatter and saved layers), and the whole
command line in-process (`run_app`, `promptgen FILE --dry-run --flag=VALUE`).
"""

from __future__ import annotations

import io
import math
import os
from collections.abc import Iterator
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from promptgen.cli import run_app
from promptgen.cli.run import FLAGGED, _flag_type, _switch, options_from_flags, parse_params
from promptgen.config import resolve_options
from promptgen.errors import BadInputError
from promptgen.options import BY_KEY, OPTION_FIELDS, OptionField, Options, flat, nest
from tests.conftest import REPO

SAMPLE = str(REPO / "samples" / "classify-sentiment.prompty")
FAST = settings(max_examples=150, deadline=None, derandomize=True)

NASTY_TEXT = [
    "", " ", "\t", "nan", "NaN", "inf", "-inf", "1e309", "-1", "0", "1", "2", "100", "101",
    "1.5", "9" * 40, "-" * 3, ";", "a;b", " ; ", "min", "high", "MAX", "http://",
    "http//x", "https://127.0.0.1:1/v1", "http://127.0.0.1:70000/v1", "file:///etc/passwd",
    "http://u:p@h/v1", "http://h/v1?api-key=x", "../..", "/dev/null", "x=1", "=1", "[x]",
    "\x00", "é", "a\nb",
]  # fmt: skip
TEXT = st.one_of(st.sampled_from(NASTY_TEXT), st.text(max_size=24))
INTS = st.one_of(
    st.integers(min_value=-3, max_value=2000),
    st.sampled_from([0, -1, 1024, 1025, 10**6, 2**63, -(2**63), 10**40]),
)
FLOATS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, 1.0, 2.0, 2.0001, 100.5, -1e-9, math.nan, math.inf, -math.inf]),
)
ANY = st.one_of(TEXT, INTS, FLOATS, st.booleans(), st.none(), st.lists(TEXT, max_size=3))


def _typed(field: OptionField) -> st.SearchStrategy[Any]:
    """Values of the type Typer hands over for this flag."""
    kind = _flag_type(field)
    if kind is bool:
        return st.booleans()
    if kind is int:
        return INTS
    if kind is float:
        return FLOATS
    if kind is str:
        return TEXT
    return st.lists(TEXT, min_size=1, max_size=3)  # repeated or "a;b" flags


FLAG_VALUES = st.lists(
    st.sampled_from(FLAGGED).flatmap(lambda f: st.tuples(st.just(f), _typed(f))),
    min_size=1,
    max_size=4,
)


def _assert_one_line(err: BadInputError) -> None:
    line = err.one_line()
    assert line.strip() and "\n" not in line and "\r" not in line, line


def _assert_valid(options: Options) -> None:
    """Accepted options hold every declared constraint: they validate again as they are."""
    values = flat(options)
    again = Options.model_validate(nest(values))
    assert flat(again) == values or _same_with_nan(flat(again), values)
    for field in OPTION_FIELDS:
        value = values[field.name]
        if isinstance(value, float):
            assert math.isfinite(value), field.name
    _assert_sane(options)


# What the docs promise of accepted options, written out apart from the declarations.
RANGES = {
    "fail_under": (0, 100),
    "fail_on_error": (0, 1),
    "temperature": (0, 2),
    "groundtruth_threshold": (0, 100),
    "concurrency": (1, 1024),
    "runs_per_test": (1, math.inf),
    "tests_per_rule": (1, math.inf),
    "max_rules": (1, math.inf),
    "max_rules_per_test_generation": (1, math.inf),
    "test_generations": (1, math.inf),
    "max_tests_to_run": (1, math.inf),
    "filter_tests": (1, math.inf),
}


def _assert_sane(options: Options) -> None:
    for name, (low, high) in RANGES.items():
        value = options[name]
        assert value is None or low <= value <= high, (name, value)
    api_base = options["api_base"]
    if api_base is not None:
        assert api_base.startswith(("http://", "https://")) and api_base.strip() == api_base
    for name in ("models", "eval_models", "groundtruth_eval_models"):
        assert all(m.strip() for m in options[name]), name
    assert options.effort in ("min", "low", "medium", "high")


def _same_with_nan(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return a.keys() == b.keys() and all(
        x == y or (isinstance(x, float) and isinstance(y, float) and x != x and y != y)
        for x, y in zip(a.values(), b.values(), strict=True)
    )


@FAST
@given(FLAG_VALUES)
def test_flags_are_accepted_valid_or_refused_in_one_line(given: list[tuple[Any, Any]]) -> None:
    values = {field.name: value for field, value in given}
    try:
        options = options_from_flags(values)
    except BadInputError as err:
        _assert_one_line(err)
        flags = {f.flag for f, _ in given} | {"--no-cache"}
        assert any(flag and flag in err.one_line() for flag in flags), err.one_line()
        return
    _assert_valid(options)
    try:
        resolved, sources = resolve_options(options)
    except BadInputError as err:  # a check that needs the merged layers
        _assert_one_line(err)
        return
    _assert_valid(resolved)
    fields = {field.name: field for field, _ in given}
    for name, value in values.items():  # a flag drawn twice: its last value counts
        if value is not None and not (_switch(fields[name]) and value is False):
            assert sources[name] == "command line", name


@FAST
@given(st.lists(TEXT, max_size=4))
def test_params_are_parsed_or_refused(items: list[str]) -> None:
    try:
        params = parse_params(items)
    except BadInputError as err:
        _assert_one_line(err)
        assert "--param" in err.one_line()
        return
    assert isinstance(params, dict) and all(isinstance(k, str) and k for k in params)


@FAST
@given(
    st.dictionaries(st.sampled_from(sorted(BY_KEY)), ANY, max_size=4),
    st.dictionaries(st.sampled_from([f.name for f in OPTION_FIELDS]), ANY, max_size=3),
)
def test_frontmatter_and_saved_layers_are_checked(
    front: dict[str, Any], saved: dict[str, Any]
) -> None:
    try:
        options, _ = resolve_options(None, frontmatter=front, saved=saved, prompt_file="p.prompty")
    except BadInputError as err:
        _assert_one_line(err)
        return
    _assert_valid(options)


@pytest.fixture
def clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    for name in list(os.environ):
        if name.startswith(("PROMPTGEN_", "OPENAI_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("PROMPTGEN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PROMPTGEN_CONFIG", str(tmp_path / "none.toml"))
    (tmp_path / "none.toml").write_text("")
    monkeypatch.chdir(tmp_path)
    yield tmp_path


VALUED = [f for f in FLAGGED if not _switch(f) and _flag_type(f) is not bool]


@settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(st.lists(st.tuples(st.sampled_from(VALUED), TEXT), min_size=1, max_size=3))
def test_the_command_line_exits_0_or_2_with_one_line(
    clean_env: Path, flags: list[tuple[OptionField, str]]
) -> None:
    args = [SAMPLE, "--dry-run", f"--out={clean_env / 'out'}"]
    args += [f"{field.flag}={value}" for field, value in flags]
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = run_app(args=args)
    assert code in (0, 2), (args, err.getvalue())
    if code == 2:
        lines = err.getvalue().strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("promptgen: error: "), err.getvalue()
        assert out.getvalue() == ""
    else:
        assert "total" in out.getvalue()
    assert not (clean_env / "out").exists()  # a dry run writes nothing
