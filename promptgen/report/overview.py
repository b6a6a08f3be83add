"""The overview table: one row per (model, scenario), plus an "(all)" row per model.

`errors` counts every run without a usable answer; `faulty` is the part of them whose
reply came back empty or cut off at the token limit (never judged, so in no rate).
`undecided` counts the (run, metric) pairs where a metric or check could not decide (a
checker's lambda failed, a judge's call failed): such a metric's cell is "-" or averages
only the runs it decided; report.md lists each with its reason.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import TYPE_CHECKING, Any

from rich import box
from rich.console import Console, JustifyMethod
from rich.table import Table
from rich.text import Text

from promptgen.context import Context
from promptgen.report.stats import (
    compliance_rate,
    faulty,
    judged,
    mean,
    metric_names,
    number,
    scenario_of,
    undecided,
)
from promptgen.results import Test, TestRun

if TYPE_CHECKING:
    import pandas as pd

ALL_SCENARIOS = "(all)"
BASE_COLUMNS = [
    "model",
    "scenario",
    "tests",
    "runs",
    "errors",
    "faulty",
    "undecided",
    "compliance",
    "rule_compliance",
    "inverse_compliance",
    "valid_compliance",
]
USAGE_COLUMNS = ["cost", "tokens", "latency_p50_ms", "latency_p95_ms"]
# Short headers so the terminal table fits in 100 columns with a metric or two.
LABELS = {
    "compliance": "compliance",
    "rule_compliance": "rules",
    "inverse_compliance": "inverse",
    "valid_compliance": "valid",
    "latency_p50_ms": "p50 ms",
    "latency_p95_ms": "p95 ms",
}


def metric_columns(ctx: Context) -> dict[str, str]:
    """Metric name -> column name; a metric named like a fixed column gets a prefix."""
    taken = {*BASE_COLUMNS, *USAGE_COLUMNS}
    return {n: f"metric:{n}" if n in taken else n for n in metric_names(ctx)}


def overview(ctx: Context) -> pd.DataFrame:
    """Compliance, metric averages, usage and latency per model and scenario."""
    import pandas as pd  # about half a second: loaded when the table is built

    metrics = metric_columns(ctx)
    columns = [*BASE_COLUMNS, *metrics.values(), *USAGE_COLUMNS]
    tests = {t.id: t for t in ctx.tests}
    blank = Counter(item.run.key for item in undecided(ctx))
    rows = []
    for model in ctx.models_run:
        runs = [r for r in ctx.test_runs if r.model == model]
        scenarios = dict.fromkeys(scenario_of(tests.get(r.test_id)) for r in runs)
        rows.append(_row(model, ALL_SCENARIOS, runs, tests, metrics, blank))
        for scenario in scenarios:
            chosen = [r for r in runs if scenario_of(tests.get(r.test_id)) == scenario]
            rows.append(_row(model, scenario, chosen, tests, metrics, blank))
    frame = pd.DataFrame(rows, columns=columns)
    if frame.empty:
        return frame
    counts = ("tests", "runs", "errors", "faulty", "undecided", "tokens")
    return frame.astype(dict.fromkeys(counts, "int64"))


def _row(
    model: str,
    scenario: str,
    runs: list[TestRun],
    tests: dict[str, Test],
    metrics: dict[str, str],
    blank: Counter[tuple[str, str, int]],
) -> dict[str, Any]:
    def rate(keep: Any) -> float:
        return _nan(compliance_rate(r for r in runs if keep(tests.get(r.test_id))))

    import pandas as pd

    latencies = pd.Series([r.latency_ms for r in runs if r.latency_ms is not None], dtype=float)
    row: dict[str, Any] = {
        "model": model,
        "scenario": scenario,
        "tests": len({r.test_id for r in runs}),
        "runs": len(runs),
        "errors": sum(r.error is not None or r.fault is not None for r in runs),
        "faulty": faulty(runs),
        "undecided": sum(blank[r.key] for r in runs),
        "compliance": _nan(compliance_rate(runs)),
        "rule_compliance": rate(lambda t: not (t and t.inverse)),
        "inverse_compliance": rate(lambda t: bool(t and t.inverse)),
        "valid_compliance": rate(lambda t: not t or t.valid is not False),
    }
    for name, column in metrics.items():
        scores = (r.metrics[name].score for r in runs if name in r.metrics and judged(r))
        row[column] = _nan(mean(scores))
    row["cost"] = float(sum(r.usage.cost for r in runs))
    row["tokens"] = sum(r.usage.total_tokens for r in runs)
    row["latency_p50_ms"] = latencies.quantile(0.5) if len(latencies) else math.nan
    row["latency_p95_ms"] = latencies.quantile(0.95) if len(latencies) else math.nan
    return row


def _nan(value: float | None) -> float:
    return math.nan if value is None else value


def overall_compliance(ctx: Context) -> float | None:
    """Compliance rate (%) over every run of every model; None when nothing was judged."""
    return compliance_rate(ctx.test_runs)


def error_rate(ctx: Context) -> float:
    """Share of runs that errored, as a percentage (0 when nothing ran)."""
    runs = ctx.test_runs
    errored = sum(r.error is not None or r.fault is not None for r in runs)
    return 100.0 * errored / len(runs) if runs else 0.0


def format_cell(column: str, value: Any) -> str:
    """A cell as people read it: rates and scores to one decimal, "-" when missing."""
    if isinstance(value, float) and math.isnan(value):
        return "-"
    if column == "cost":
        return f"{value:.4f}"
    if column.startswith("latency"):
        return f"{value:.0f}"
    if isinstance(value, float):
        return number(value)
    return str(value)


def print_overview(df: pd.DataFrame, console: Console | None = None) -> None:
    """Render the overview as rich tables on stdout (or on the console given).

    Columns never wrap; when they do not fit the terminal, the remaining ones go into
    a further table that repeats the model and scenario.
    """
    console = console or Console()
    if df.empty:
        console.print("Overview: no evaluation yet (no test runs).")
        return
    cells = {c: [format_cell(c, v) for v in df[c]] for c in df.columns}
    # +3: padding either side and the column separator.
    widths = {c: max([len(LABELS.get(c, c)), *map(len, cells[c])]) + 3 for c in cells}
    keys: list[str] = [c for c in ("model", "scenario") if c in cells]
    for part, columns in enumerate(_chunks(widths, keys, console.width)):
        title = "Overview (rates and scores in %)" if part == 0 else None
        table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
        for column in columns:
            justify: JustifyMethod = "left" if column in keys else "right"
            table.add_column(Text(LABELS.get(column, column)), justify=justify, no_wrap=True)
        for row in zip(*(cells[c] for c in columns), strict=True):
            # Text, not str: model and scenario names must not be read as rich markup.
            table.add_row(*map(Text, row))
        console.print(table)


def _chunks(widths: dict[str, int], keys: list[str], limit: int) -> list[list[str]]:
    """Split the columns into groups that fit `limit`, each starting with the key columns."""
    base = sum(widths[k] for k in keys)
    chunks: list[list[str]] = []
    current: list[str] = []
    for column in (c for c in widths if c not in keys):
        if current and base + sum(widths[c] for c in current) + widths[column] > limit:
            chunks.append(keys + current)
            current = []
        current.append(column)
    chunks.append(keys + current)
    return chunks
