"""The exit code of a run: 0 ok, 1 quality gate failed (--fail-under, --fail-on-regression),
2 bad input, 3 runtime failure.

Bad input (2) is raised long before this point. A runtime failure (3) wins over the
quality gate (1): a run with unfinished work has no trustworthy compliance figure.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from promptgen.config import RunConfig
from promptgen.context import Context
from promptgen.errors import PromptgenError
from promptgen.evaluation.scoring import VerdictKey
from promptgen.pipeline import unfinished
from promptgen.report.changes import EditChanges
from promptgen.report.diff import fell
from promptgen.report.overview import overall_compliance
from promptgen.report.safety import why_nothing
from promptgen.selection import eval_tests
from promptgen.stages import groundtruth, metrics, runs
from promptgen.words import counted


class QualityGateError(PromptgenError):
    """Results are complete, but below the bar set with --fail-under."""

    exit_code = 1


NAMED = 10  # flipped tests a regression line names before "and N more"


class RegressionError(QualityGateError):
    """--fail-on-regression: figures fell since the previous version of the prompt;
    `lines` says each one, with the tests that went pass -> fail on its model."""

    def __init__(self, message: str, lines: list[str]) -> None:
        super().__init__(message)
        self.lines = lines


def regression_lines(changes: EditChanges, points: float) -> list[str]:
    """One line per model figure that fell by more than `points` since the previous
    version (`promptgen diff --fail-on-regression`'s rule), naming the tests whose runs
    on that model went pass -> fail, worst first."""
    found = []
    for model, name, change in changes.diff.regressed(points):
        tests = [f.test_id for f in changes.regressions if model in f.models]
        more = f", and {len(tests) - NAMED} more" if len(tests) > NAMED else ""
        flipped = (
            f"pass → fail on {model}: {', '.join(tests[:NAMED])}{more}"
            if tests
            else "no run flipped (the figure moved with the tests added or retired)"
        )
        found.append(f"{model} {name} {fell(change)} since version {changes.previous}; {flipped}")
    return found


def regression_note(ctx: Context, changes: EditChanges | None, points: float | None) -> str | None:
    """Why --fail-on-regression gates nothing in this run (None: it gates, or not given)."""
    if points is None:
        return None
    flag = f"--fail-on-regression {points:g}"
    if ctx.edit is None:
        return f"{flag}: no previous version of this prompt in the output folder; not gated"
    if changes is None:
        return (
            f"{flag}: the previous version {ctx.edit.previous} is not kept in history/; not gated"
        )
    return None


@dataclass(frozen=True)
class Failures:
    calls: int
    failed: int
    example: str = ""  # the most common error, as recorded
    cut_off: int = 0  # answers under test cut off at the token limit

    def said(self, allowed: float) -> PromptgenError:
        """The error a run with more failures than `allowed` ends with: how many, the
        most common reason, and what helps (a cut-off answer comes back the same from a
        deterministic model, so re-running alone does not)."""
        hint = "re-run the same command to retry only those"
        if self.cut_off:
            hint += (
                f"; {self.cut_off} answer(s) under test were cut off at the token limit: "
                "raise the prompt's max_tokens, or accept a share with --fail-on-error RATE"
            )
        return PromptgenError(
            f"{self.failed} of {self.calls} evaluation calls failed "
            f"({self.rate:.1%} > {allowed:.1%} allowed by --fail-on-error), "
            f"e.g. {self.example}",
            hint=hint,
        )

    @property
    def rate(self) -> float:
        return self.failed / self.calls if self.calls else 0.0


def outstanding(ctx: Context, cfg: RunConfig) -> tuple[set[str], set[VerdictKey], set[str]]:
    """The work a re-run would retry: cells of the runs stage, verdicts of the metrics
    stage, tests of the groundtruth stage (their keys; empty for a stage not enabled)."""
    cells = {i.key for i in runs.todo(ctx, cfg)} if runs.enabled(cfg) else set()
    verdicts = {i.data.key for i in metrics.todo(ctx, cfg)} if metrics.enabled(cfg) else set()
    tests = {i.key for i in groundtruth.todo(ctx, cfg)} if groundtruth.enabled(cfg) else set()
    return cells, verdicts, tests


def evaluation_failures(ctx: Context, cfg: RunConfig) -> Failures:
    """Cells, judgements and groundtruth answers of the evaluation, and how many failed
    and are still outstanding: a failure no re-run would retry (a groundtruth candidate
    of a test another candidate settled, a cell of a model no longer under test) is
    history, not work left, and fails no run."""
    cells, verdicts, tests = outstanding(ctx, cfg)
    retries = groundtruth.candidates(cfg)
    items = [
        *(r.error if runs.cell_key(*r.key) in cells else None for r in ctx.test_runs),
        *(r.error if r.key in verdicts else None for r in ctx.metric_results),
        *(a.error if a.test_id in tests and a.attempt < retries else None for a in ctx.groundtruth),
    ]
    errors = Counter(e for e in items if e is not None)
    example = errors.most_common(1)[0][0] if errors else ""
    cut_off = sum(r.fault == "truncated" and runs.cell_key(*r.key) in cells for r in ctx.test_runs)
    return Failures(len(items), sum(errors.values()), example, cut_off)


def not_evaluated(ctx: Context, cfg: RunConfig) -> str | None:
    """Why models were named and no test ran on them (None: some did, or none named)."""
    if not cfg.models or ctx.test_runs or unfinished(ctx, cfg, "generation"):
        return None
    if eval_tests(ctx, cfg):
        return None  # tests to run, but not run: a runtime failure, said by its stage
    why = why_nothing(ctx) if cfg.safety else "no test to run"
    return f"nothing was evaluated on {', '.join(cfg.models)}: {why}"


def gate(ctx: Context, cfg: RunConfig, changes: EditChanges | None = None) -> None:
    """Raise the error whose exit code this run deserves; return when it is 0.

    Generation stages with work left fail the run; in the evaluation, the share of
    failed calls is weighed against --fail-on-error (a stage declares its phase).
    `changes` (what an edit of the prompt did) is what --fail-on-regression weighs."""
    fail_under, fail_on_error = cfg.options.run.fail_under, cfg.options.run.fail_on_error
    left = unfinished(ctx, cfg, "generation")
    if left:
        raise PromptgenError(
            f"stages did not finish: {', '.join(left)}",
            hint="re-run the same command to resume",
        )
    nothing = not_evaluated(ctx, cfg)
    if nothing is not None and (fail_under is not None or fail_on_error is not None):
        raise QualityGateError(nothing)
    failures = evaluation_failures(ctx, cfg)
    allowed = fail_on_error if fail_on_error is not None else 0.0
    if failures.failed and failures.rate > allowed:
        raise failures.said(allowed)
    if fail_under is not None:
        rate = overall_compliance(ctx)
        if rate is None:
            raise QualityGateError(
                f"--fail-under {fail_under:g}: no compliance verdicts to check",
                hint="give --models (and keep --compliance on)",
            )
        if rate < fail_under:
            raise QualityGateError(
                f"overall compliance {rate:.1f}% is below --fail-under {fail_under:g}%"
            )
    points = cfg.options.run.fail_on_regression
    if points is not None and changes is not None:
        lines = regression_lines(changes, points)
        if lines:
            names = ", ".join(f"{m} {n}" for m, n, _ in changes.diff.regressed(points))
            raise RegressionError(
                f"--fail-on-regression {points:g}: {counted(len(lines), 'figure')} fell by "
                f"more than {points:g} points since version {changes.previous} ({names})",
                lines,
            )
