"""The built-in judges: compliance (on by default) and accuracy (with a groundtruth),
plus the judge of groundtruth answers."""

from __future__ import annotations

from promptgen.evaluation.judges import ComplianceJudge, ScoreJudge
from promptgen.evaluation.protocol import Metric
from promptgen.model import PromptUnderTest
from promptgen.options import Options
from promptgen.results import MetricInfo

LOAD_ORDER = 1
GROUNDTRUTH_JUDGE = ScoreJudge(
    MetricInfo(name="groundtruth", kind="groundtruth", scorer=True), scores_groundtruth=True
)


def metrics(prompt: PromptUnderTest, options: Options) -> list[Metric]:
    return builtin_metrics(options)


def builtin_metrics(options: Options) -> list[Metric]:
    metrics: list[Metric] = []
    if options.evaluation.compliance:
        info = MetricInfo(
            name="compliance",
            kind="compliance",
            description="A judge reads the prompt, its rules, the input and the output, "
            "and answers ok or err.",
        )
        metrics.append(ComplianceJudge(info, reads_analysis=True))
    if options.evaluation.groundtruth:
        info = MetricInfo(
            name="accuracy",
            kind="accuracy",
            scorer=True,
            description="How well the output agrees with the groundtruth answer (0-100).",
        )
        metrics.append(ScoreJudge(info, needs_groundtruth=True, reads_analysis=True))
    return metrics
