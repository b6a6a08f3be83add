"""A deterministic check as a metric: no model call, a pass/fail verdict."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from promptgen.errors import BadInputError
from promptgen.evaluation.parse import check_label, parse_check
from promptgen.evaluation.protocol import Case, Metric, MetricBase, Verdict
from promptgen.model import PromptUnderTest
from promptgen.options import Options
from promptgen.results import MetricInfo

LOAD_ORDER = 3


def check_name(spec: Any) -> str:
    """The metric name of a check: its own `name` when it has one, else `check=value`."""
    if isinstance(spec, str):
        return spec
    label = check_label(spec)
    if label is not None:
        return label
    if not isinstance(spec, dict) or len(spec) != 1:
        return str(spec)  # not a check: parse_check says why
    ((name, args),) = spec.items()
    shown = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False, default=str)
    return f"{name}={shown}"


@dataclass
class CheckMetric(MetricBase):
    """`spec` as written; when its values use `{{name}}`, each test fills them in."""

    spec: Any

    def __post_init__(self) -> None:
        self.judged = False  # a check asks no model
        self._check = parse_check(self.spec)  # raises BadInputError on a bad check
        self._templated = "{{" in json.dumps(self.spec)

    @classmethod
    def of(cls, spec: Any) -> CheckMetric:
        name = check_name(spec)
        return cls(MetricInfo(name=name, kind="check", description="deterministic check"), spec)

    async def evaluate(self, case: Case) -> Verdict:
        check = self._check
        if self._templated:  # values that name the test's inputs, e.g. {{expected}}
            values = dict(case.arguments)
            test = case.test
            if test.origin == "sample" and test.expected_output is not None:
                values.setdefault("expected", test.expected_output)
            spec, missing = fill_placeholders(self.spec, values)
            if missing:
                reason = f"the check needs {{{{{missing[0]}}}}}, which this test does not give"
                return Verdict(outcome="unknown", reason=reason)
            try:
                check = parse_check(spec)
            except BadInputError as err:  # e.g. a {{value}} that makes a bad regex
                return Verdict(outcome="unknown", reason=f"for this test: {err.message}")
        result = check.evaluate(case.output)
        # The check's own measure (a count, a distance) is in its reason; the score is
        # pass/fail.
        return Verdict.of("ok" if result.passed else "err", result.reason)


def metrics(prompt: PromptUnderTest, options: Options) -> list[Metric]:
    return check_metrics(prompt, options)


def check_metrics(prompt: PromptUnderTest, options: Options) -> list[Metric]:
    """The frontmatter's checks (a bad one is reported with its line) and --check."""
    metrics: dict[str, Metric] = {}
    for i, spec in enumerate(prompt.checks):
        try:
            metric = CheckMetric.of(spec)
        except BadInputError as err:
            err.file = err.file or prompt.source
            err.line = err.line or (prompt.check_lines[i] if i < len(prompt.check_lines) else None)
            raise
        metrics[metric.name] = metric
    for spec in options.evaluation.checks:
        metric = CheckMetric.of(spec)
        metrics[metric.name] = metric
    return list(metrics.values())


_PLACEHOLDER = re.compile(r"\{\{\s*([\w.-]+)\s*\}\}")


def fill_placeholders(spec: Any, values: dict[str, Any]) -> tuple[Any, list[str]]:
    """`{{name}}` in a check's strings replaced by the test's values (plain text
    replacement, as gh models does: no logic, nothing evaluated); returns the names
    no value was found for."""
    missing: list[str] = []

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in values:
            missing.append(name)
            return match.group(0)
        value = values[name]
        return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)

    def walk(node: Any) -> Any:
        if isinstance(node, str):
            return _PLACEHOLDER.sub(replace, node)
        if isinstance(node, list):
            return [walk(v) for v in node]
        if isinstance(node, dict):
            return {k: walk(v) for k, v in node.items()}
        return node

    return walk(spec), missing
