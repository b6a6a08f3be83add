"""Scoring outputs: one `Metric` protocol (`evaluate(case) -> Verdict`) implemented by
deterministic checks, the built-in judges and template judges. Each metric kind is a
module of this package with a `metrics(prompt, options)` loader; `load_metrics` loads
them all once per run, and the run configuration holds them."""

from promptgen.evaluation.builtin import GROUNDTRUTH_JUDGE
from promptgen.evaluation.case import judge_values, make_case
from promptgen.evaluation.check_metric import CheckMetric, check_metrics, check_name
from promptgen.evaluation.custom import JUDGE_VALUES, METRIC_SUFFIX, discover
from promptgen.evaluation.loading import load_metrics
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
