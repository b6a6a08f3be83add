"""Scoring outputs: one `Metric` protocol (`evaluate(case) -> Verdict`) implemented by
deterministic checks, the built-in judges and template judges. Metrics are loaded once
per run (`load_metrics`) and held by the run configuration."""

from promptgen.evaluation.case import judge_values, make_case
from promptgen.evaluation.check_metric import CheckMetric, check_name
from promptgen.evaluation.loading import (
    GROUNDTRUTH_JUDGE,
    JUDGE_VALUES,
    METRIC_SUFFIX,
    check_metrics,
    discover,
    load_metrics,
)
from promptgen.evaluation.protocol import PASS_SCORE, Case, Metric, Verdict

__all__ = [
    "GROUNDTRUTH_JUDGE",
    "JUDGE_VALUES",
    "METRIC_SUFFIX",
    "PASS_SCORE",
    "Case",
    "CheckMetric",
    "Metric",
    "Verdict",
    "check_metrics",
    "check_name",
    "discover",
    "judge_values",
    "load_metrics",
    "make_case",
]
