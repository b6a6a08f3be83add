"""The `tests:` of a Promptarchitect prompt file, checked (with the line of what is
wrong) and normalised.

`tests` maps a test id to a spec discriminated on `type`. Both shapes Promptarchitect
uses are read: its code's (`property` with top-level `unit`, `limit: {min, max}` or
`equals`) and its docs' (`property: {unit, min, max, equal}`). Every spec comes out in
one form, which evaluation/promptarchitect.py runs and the export writes back:

    question  {type, prompt}
    score     {type, prompt, min, max, threshold}
    metric    {type, metric: faithfulness, input: {answer, context, question?}, limit: {min, max}}
    property  {type, unit, min, max, equals}
    format    {type, format: json | html | markdown | text}
    language  {type, lang_code}
    keyword   {type, keyword}
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from promptgen.bounds import printable
from promptgen.errors import PromptFormatError
from promptgen.yamlpos import Path_, line_of

TYPES = ("question", "score", "metric", "property", "format", "language", "keyword")
UNITS = ("words", "sentences", "lines", "paragraphs", "characters")
OUTPUT_FORMATS = ("json", "html", "markdown", "text")
METRICS = ("faithfulness",)
METRIC_FIELDS = ("question", "answer", "context")
MAX_TESTS = 1_000
_LANG = re.compile(r"^[a-z]{2}$")
_HINT = "see docs/promptarchitect.md for the test types and their keys"


@dataclass
class Where:
    """The file, the line of every frontmatter key, and the warnings gathered."""

    file: str
    lines: dict[Path_, int]
    warnings: list[str] = field(default_factory=list)

    def line(self, *path: Any) -> int | None:
        return line_of(self.lines, tuple(path))

    def error(self, message: str, *path: Any, hint: str = _HINT) -> PromptFormatError:
        return PromptFormatError(
            f"frontmatter: {message}", file=self.file, line=self.line(*path), hint=hint
        )

    def warn(self, message: str, *path: Any) -> None:
        self.warnings.append(f"{self.file}:{self.line(*path) or '?'}: {message}")


def read_tests(value: Any, where: Where) -> dict[str, dict[str, Any]]:
    """`tests:` as {test id: normalised spec}; an empty or missing section gives {}."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise where.error("'tests' should map test ids to test specs", "tests")
    if len(value) > MAX_TESTS:
        raise where.error(
            f"'tests' has {len(value):,} entries; promptgen takes at most {MAX_TESTS:,}",
            "tests",
            hint="keep the most useful ones",
        )
    tests: dict[str, dict[str, Any]] = {}
    for key, spec in value.items():
        test_id = str(key).strip() if isinstance(key, str | int) else ""
        if not test_id or isinstance(key, bool):
            raise where.error(f"test id {printable(key)!r} should be a name", "tests", key)
        if test_id in tests:
            raise where.error(f"two tests are named {test_id!r}", "tests", key)
        tests[test_id] = read_test(test_id, key, spec, where)
    return tests


def read_test(test_id: str, key: Any, spec: Any, where: Where) -> dict[str, Any]:
    """One test's spec, normalised (see the module docstring)."""
    at = ("tests", key)
    if not isinstance(spec, dict):
        raise where.error(f"test '{test_id}' should be a mapping with a 'type'", *at)
    kind = spec.get("type")
    if kind is None:
        raise where.error(
            f"test '{test_id}' has no 'type'", *at, hint=f"give one of {', '.join(TYPES)}"
        )
    if kind not in TYPES:
        raise where.error(
            f"test '{test_id}': unknown type {printable(kind)!r}",
            *at,
            "type",
            hint=f"use one of {', '.join(TYPES)}",
        )
    test = _Test(test_id, at, spec, where)
    return {"type": kind, **_READERS[kind](test)}


@dataclass
class _Test:
    """One spec being read: lookups that fail with the key's line."""

    id: str
    at: Path_
    spec: dict[str, Any]
    where: Where

    def error(self, message: str, *path: Any, hint: str = _HINT) -> PromptFormatError:
        return self.where.error(f"test '{self.id}': {message}", *self.at, *path, hint=hint)

    def keys(
        self, allowed: tuple[str, ...], node: dict[str, Any] | None = None, *path: Any
    ) -> None:
        for key in node if node is not None else self.spec:
            if key not in allowed:
                kind = self.spec["type"]
                raise self.error(
                    f"unknown key {printable(key)!r}",
                    *path,
                    key,
                    hint=f"a {kind} test has: {', '.join(allowed)}",
                )

    def text(self, key: str) -> str:
        value = self.spec.get(key)
        if not isinstance(value, str) or not value.strip():
            raise self.error(f"'{key}' is required (text)", key)
        return value

    def mapping(self, key: str, allowed: tuple[str, ...]) -> dict[str, Any]:
        value = self.spec.get(key)
        if not isinstance(value, dict):
            raise self.error(f"'{key}' should be a mapping of {', '.join(allowed)}", key)
        self.keys(allowed, value, key)
        return value

    def number(self, value: Any, *path: Any, whole: bool = False) -> float | int | None:
        """A number (a whole one with `whole`), or None when not given."""
        if value is None:
            return None
        kinds = (int,) if whole else (int, float)
        if isinstance(value, bool) or not isinstance(value, kinds):
            expected = "a whole number" if whole else "a number"
            raise self.error(f"'{'.'.join(map(str, path))}' should be {expected}", *path)
        return value


def _question(test: _Test) -> dict[str, Any]:
    test.keys(("type", "prompt"))
    return {"prompt": test.text("prompt")}


def _score(test: _Test) -> dict[str, Any]:
    test.keys(("type", "prompt", "min", "max", "threshold"))
    prompt = test.text("prompt")
    bounds: dict[str, float | int] = {}
    for key in ("min", "max", "threshold"):
        number = test.number(test.spec.get(key), key)
        if number is None:
            raise test.error(f"'{key}' is required (a number)", key)
        bounds[key] = number
    low, high, threshold = bounds["min"], bounds["max"], bounds["threshold"]
    if low >= high:
        raise test.error(f"'min' ({low}) should be below 'max' ({high})", "min")
    if not low <= threshold <= high:
        raise test.error(f"'threshold' ({threshold}) should be from {low} to {high}", "threshold")
    return {"prompt": prompt, **bounds}


def _metric(test: _Test) -> dict[str, Any]:
    test.keys(("type", "metric", "input", "limit"))
    metric = test.spec.get("metric")
    if metric not in METRICS:
        raise test.error(
            f"metric {printable(metric)!r} is not implemented",
            "metric",
            hint="promptgen implements faithfulness (as Promptarchitect documents)",
        )
    mapping = test.mapping("input", METRIC_FIELDS)
    for key, name in mapping.items():
        if not isinstance(name, str) or not name.strip():
            raise test.error(
                f"'input.{key}' should name a field (input, output, a property)", "input", key
            )
    for key in ("answer", "context"):
        if key not in mapping:
            raise test.error(
                f"'input' needs '{key}'", "input", hint="e.g. input: {answer: output, context: doc}"
            )
    limit = test.mapping("limit", ("min", "max"))
    low = test.number(limit.get("min"), "limit", "min")
    high = test.number(limit.get("max"), "limit", "max")
    _check_limit(test, low, high, share=True)
    return {"metric": metric, "input": dict(mapping), "limit": {"min": low, "max": high}}


def _check_limit(test: _Test, low: Any, high: Any, *, share: bool = False) -> None:
    if low is None and high is None:
        raise test.error("'limit' needs min, max or both", "limit")
    if low is not None and high is not None and low > high:
        raise test.error(f"'limit.min' ({low}) is above 'limit.max' ({high})", "limit")
    for value in (low, high):
        if value is not None and share and not 0 <= value <= 1:
            raise test.error(
                f"limit {value} is outside 0-1", "limit", hint="faithfulness is a share from 0 to 1"
            )
        if value is not None and not share and value < 0:
            raise test.error(f"limit {value} is below 0", "limit", hint="counts start at 0")


def _property(test: _Test) -> dict[str, Any]:
    spec = test.spec
    path: tuple[str, ...]
    if "property" in spec:  # the docs' shape
        if {"unit", "limit", "equals"} & set(spec):
            raise test.error(
                "mixes the two property shapes",
                "property",
                hint="write property: {unit, min, max, equal} or unit with limit/equals",
            )
        test.keys(("type", "property"))
        inner = test.mapping("property", ("unit", "min", "max", "equal", "equals"))
        if "equal" in inner and "equals" in inner:
            raise test.error("gives both 'equal' and 'equals'", "property")
        unit, path = inner.get("unit"), ("property",)
        low = test.number(inner.get("min"), "property", "min", whole=True)
        high = test.number(inner.get("max"), "property", "max", whole=True)
        key = "equal" if "equal" in inner else "equals"
        equals = test.number(inner.get(key), "property", key, whole=True)
    else:  # the code's shape
        test.keys(("type", "unit", "limit", "equals"))
        unit, path = spec.get("unit"), ()
        limit = test.mapping("limit", ("min", "max")) if "limit" in spec else None
        low = test.number((limit or {}).get("min"), "limit", "min", whole=True)
        high = test.number((limit or {}).get("max"), "limit", "max", whole=True)
        equals = test.number(spec.get("equals"), "equals", whole=True)
    if unit not in UNITS:
        raise test.error(
            f"unit {printable(unit)!r} is not one of {', '.join(UNITS)}", *path, "unit"
        )
    if equals is None and low is None and high is None:
        needs = "min, max or equal" if path else "limit (min, max) or equals"
        raise test.error(f"needs {needs}", *path)
    if equals is None:
        _check_limit(test, low, high)
    elif equals < 0:
        raise test.error(f"equals {equals} is below 0", *path)
    elif low is not None or high is not None:
        test.where.warn(
            f"test '{test.id}': min/max are not used: equals decides (as in Promptarchitect)",
            *test.at,
        )
        low = high = None
    return {"unit": unit, "min": low, "max": high, "equals": equals}


def _format(test: _Test) -> dict[str, Any]:
    test.keys(("type", "format"))
    value = test.spec.get("format")
    if value not in OUTPUT_FORMATS:
        raise test.error(
            f"format {printable(value)!r} is not one of {', '.join(OUTPUT_FORMATS)}", "format"
        )
    return {"format": value}


def _language(test: _Test) -> dict[str, Any]:
    test.keys(("type", "lang_code"))
    code = test.spec.get("lang_code")
    if not isinstance(code, str) or not _LANG.match(code):
        raise test.error(
            f"lang_code {printable(code)!r} should be two lower-case letters",
            "lang_code",
            hint="an ISO 639-1 code such as en, fr or nl",
        )
    return {"lang_code": code}


def _keyword(test: _Test) -> dict[str, Any]:
    test.keys(("type", "keyword"))
    value = test.spec.get("keyword")
    if not isinstance(value, str) or not value:
        raise test.error("'keyword' is required (text)", "keyword")
    return {"keyword": value}


_READERS = {
    "question": _question,
    "score": _score,
    "metric": _metric,
    "property": _property,
    "format": _format,
    "language": _language,
    "keyword": _keyword,
}


def fields_read(tests: dict[str, dict[str, Any]]) -> dict[str, str]:
    """The sample fields the metric tests read (other than `input` and `output`), each
    with a description of what it holds, for the stages that generate test inputs."""
    roles = {
        "context": "The source material the output must stay faithful to",
        "question": "The question the output answers",
        "answer": "The answer to check",
    }
    fields: dict[str, str] = {}
    for test_id, spec in tests.items():
        if spec["type"] != "metric":
            continue
        for key, name in spec["input"].items():
            if name not in ("input", "output") and name not in fields:
                fields[name] = f"{roles[key]} (read by the {spec['metric']} test '{test_id}')."
    return fields
