"""Deterministic checks: each a small dataclass with one `evaluate` method.

Written in YAML as `{name: arguments}`, e.g. `- regex: "^[A-Z]+$"` or
`- word-count: {min: 3, max: 12}`; a `not-` prefix negates any check.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from promptgen.bounds import MAX_OUTPUT_NESTING, REGEX_TIMEOUT_SECONDS, too_deep
from promptgen.errors import BadInputError


@dataclass(frozen=True)
class CheckResult:
    passed: bool
    reason: str
    score: float | None = None


def _fold(text: str, ignore_case: bool) -> str:
    return text.casefold() if ignore_case else text


@dataclass
class Equals:
    """The output equals `value` (compared as JSON when `value` is an object or list)."""

    name: ClassVar[str] = "equals"
    value: Any

    def evaluate(self, output: str) -> CheckResult:
        if isinstance(self.value, (dict, list)):
            value, problem = _json(output)
            if problem is not None:
                return CheckResult(False, f"the output is {problem}")
            same = value == self.value
            return CheckResult(same, "equal as JSON" if same else "differs as JSON")
        same = output.strip() == str(self.value).strip()
        return CheckResult(same, "equal" if same else f"expected {str(self.value)[:80]!r}")


@dataclass
class Contains:
    name: ClassVar[str] = "contains"
    value: str
    ignore_case: bool = False

    def evaluate(self, output: str) -> CheckResult:
        found = _fold(str(self.value), self.ignore_case) in _fold(output, self.ignore_case)
        return CheckResult(found, f"{'found' if found else 'missing'}: {str(self.value)[:80]!r}")


@dataclass
class ContainsSome:
    """Any (`mode="any"`) or all (`mode="all"`) of `values` occur in the output."""

    name: ClassVar[str] = "contains-any"
    values: list[str]
    mode: Literal["any", "all"] = "any"
    ignore_case: bool = False

    def evaluate(self, output: str) -> CheckResult:
        text = _fold(output, self.ignore_case)
        hits = [v for v in self.values if _fold(str(v), self.ignore_case) in text]
        passed = bool(hits) if self.mode == "any" else len(hits) == len(self.values)
        missing = [v for v in self.values if v not in hits]
        reason = f"found {hits[:5]}" if passed else f"missing {missing[:5]}"
        return CheckResult(passed, reason)


@dataclass
class Affix:
    """The output starts (`where="start"`) or ends (`where="end"`) with `value`."""

    name: ClassVar[str] = "starts-with"
    value: str
    where: Literal["start", "end"] = "start"
    ignore_case: bool = False

    def evaluate(self, output: str) -> CheckResult:
        text, value = (
            _fold(output.strip(), self.ignore_case),
            _fold(str(self.value), self.ignore_case),
        )
        passed = text.startswith(value) if self.where == "start" else text.endswith(value)
        return CheckResult(passed, f"{'' if passed else 'does not '}{self.where} with {value!r}")


_FLAGS = ("i", "m", "s", "x", "a")  # the `regex` package's flags I, M, S, X, A


@dataclass
class Regex:
    """The output matches `pattern` (the `regex` package, Python `re` syntax). A search
    that takes over REGEX_TIMEOUT_SECONDS (a catastrophic pattern such as `(a|aa)+$` on
    a long output) fails the check with "timed out"; it never hangs the run."""

    name: ClassVar[str] = "regex"
    pattern: str
    flags: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.pattern, str) or not isinstance(self.flags, str):
            raise BadInputError(
                f"regex check needs a text pattern, got {type(self.pattern).__name__}",
                hint='write - regex: "^[A-Z]"',
            )
        unknown = set(self.flags) - set(_FLAGS)
        if unknown:
            raise BadInputError(
                f"regex flags {''.join(sorted(unknown))!r} are unknown", hint="use i, m, s, x, a"
            )
        import regex  # loaded with the first regex check, not with every run

        value = 0
        for flag in self.flags:
            value |= getattr(regex, flag.upper())
        try:
            self._compiled = regex.compile(self.pattern, value | regex.VERSION0)
        except (regex.error, ValueError, OverflowError, RecursionError) as err:
            raise BadInputError(f"regex {self.pattern!r} does not compile: {err}") from err

    def evaluate(self, output: str) -> CheckResult:
        try:
            match = self._compiled.search(output, timeout=REGEX_TIMEOUT_SECONDS)
        except TimeoutError:
            return CheckResult(
                False, f"timed out after {REGEX_TIMEOUT_SECONDS:g} s on /{self.pattern}/"
            )
        return CheckResult(
            bool(match), f"{'matches' if match else 'no match for'} /{self.pattern}/"
        )


def _json(output: str) -> tuple[Any, str | None]:
    """The output parsed as JSON, or why not (deeply nested JSON is a failure, not a crash)."""
    try:
        value = json.loads(output)
    except json.JSONDecodeError as err:
        return None, f"not JSON: {err.msg} at line {err.lineno}"
    except RecursionError:
        return None, f"JSON nested more than {MAX_OUTPUT_NESTING} levels deep"
    except ValueError as err:  # a number past Python's int-to-text limit
        return None, f"not readable JSON: {err}"[:200]
    if too_deep(value, MAX_OUTPUT_NESTING) is not None:
        return None, f"JSON nested more than {MAX_OUTPUT_NESTING} levels deep"
    return value, None


@dataclass
class IsJson:
    """The whole output is JSON (optionally valid against `schema`)."""

    name: ClassVar[str] = "is-json"
    schema: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.schema is None:
            return
        from jsonschema import Draft202012Validator, SchemaError

        try:
            Draft202012Validator.check_schema(self.schema)
        except SchemaError as err:
            raise BadInputError(
                f"is-json schema is not a valid JSON Schema: {err.message}"[:300],
                hint="fix the schema (JSON Schema draft 2020-12)",
            ) from err

    def evaluate(self, output: str) -> CheckResult:
        value, problem = _json(output)
        if problem is not None:
            return CheckResult(False, problem)
        if self.schema is None:
            return CheckResult(True, "valid JSON")
        from jsonschema import Draft202012Validator

        try:
            errors = list(Draft202012Validator(self.schema).iter_errors(value))
        except RecursionError:
            return CheckResult(False, "too deeply nested to check against the schema")
        if errors:
            where = ".".join(str(p) for p in errors[0].absolute_path) or "value"
            return CheckResult(False, f"{where}: {errors[0].message}"[:200])
        return CheckResult(True, "valid JSON matching the schema")


_COUNTERS: dict[str, Callable[[str], int]] = {
    "words": lambda t: len(t.split()),
    "lines": lambda t: len([ln for ln in t.split("\n") if ln.strip()]),
    "sentences": lambda t: len([s for s in re.split(r"[.!?]+", t) if s.strip()]),
    "paragraphs": lambda t: len([p for p in re.split(r"\n\s*\n", t) if p.strip()]),
    "characters": len,
}


@dataclass
class Count:
    """The number of words/lines/sentences/paragraphs/characters is within bounds."""

    name: ClassVar[str] = "word-count"
    unit: str = "words"
    min: int | None = None
    max: int | None = None
    equals: int | None = None

    def __post_init__(self) -> None:
        if self.unit not in _COUNTERS:
            raise BadInputError(
                f"unknown count unit {self.unit!r}", hint=f"use one of {', '.join(_COUNTERS)}"
            )
        if self.min is None and self.max is None and self.equals is None:
            raise BadInputError(f"{self.unit[:-1]}-count needs min, max or equals")

    def evaluate(self, output: str) -> CheckResult:
        n = _COUNTERS[self.unit](output)
        ok = (self.equals is None or n == self.equals) and (self.min is None or n >= self.min)
        ok = ok and (self.max is None or n <= self.max)
        if self.equals is not None:
            bounds = f"exactly {self.equals}"
        elif self.min is not None and self.max is not None:
            bounds = f"{self.min} to {self.max}"
        else:
            bounds = f"at least {self.min}" if self.min is not None else f"at most {self.max}"
        return CheckResult(ok, f"{n} {self.unit}, expected {bounds}", score=float(n))


@dataclass
class Language:
    """The output is written in `code` (ISO 639-1), by langdetect on its first 500 characters."""

    name: ClassVar[str] = "language"
    code: str

    def evaluate(self, output: str) -> CheckResult:
        from langdetect import DetectorFactory, LangDetectException, detect

        DetectorFactory.seed = 0  # deterministic
        try:
            found = detect(output[:500])
        except LangDetectException:
            return CheckResult(False, "no language could be detected")
        passed = found.split("-")[0] == self.code.lower().split("-")[0]
        return CheckResult(passed, f"detected {found}, expected {self.code}")


@dataclass
class Levenshtein:
    """Edit distance to `value` is at most `threshold`."""

    name: ClassVar[str] = "levenshtein"
    value: str
    threshold: int = 5

    def evaluate(self, output: str) -> CheckResult:
        from rapidfuzz.distance import Levenshtein as distance

        d = distance.distance(output.strip(), str(self.value).strip())
        return CheckResult(d <= self.threshold, f"distance {d}, at most {self.threshold}", float(d))


@dataclass
class Not:
    """Passes where `check` fails (the `not-` prefix)."""

    check: Any

    @property
    def name(self) -> str:
        return f"not-{self.check.name}"

    def evaluate(self, output: str) -> CheckResult:
        inner = self.check.evaluate(output)
        return CheckResult(not inner.passed, f"not ({inner.reason})", inner.score)
