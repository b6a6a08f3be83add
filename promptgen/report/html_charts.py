"""The HTML report's pictures: compliance per model (inline SVG) and the rule heatmap.

Drawn here in Python so the page needs no charting library and fetches nothing.
"""

from __future__ import annotations

from html import escape

from promptgen.context import Context
from promptgen.report.stats import compliance_rate, excerpt, percent, rule_rates

BAR_HEIGHT = 24
BAR_GAP = 10
LABEL_WIDTH = 190
PLOT_WIDTH = 460


def rate_color(rate: float | None) -> str:
    """Red (0%) through amber to green (100%); grey when there is no rate."""
    if rate is None:
        return "#e5e7eb"
    return f"hsl({rate * 1.2:.0f} 70% 82%)"


def bar_color(rate: float | None) -> str:
    return "#9ca3af" if rate is None else f"hsl({rate * 1.2:.0f} 65% 45%)"


def compliance_chart(ctx: Context) -> str:
    """A horizontal bar per model: its compliance rate over every run."""
    models = ctx.models_run
    height = len(models) * (BAR_HEIGHT + BAR_GAP) + 24
    width = LABEL_WIDTH + PLOT_WIDTH + 70
    parts = [
        f'<svg id="compliance-chart" class="chart" role="img" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" xmlns="http://www.w3.org/2000/svg">',
        "<title>Compliance rate per model</title>",
    ]
    for tick in (0, 25, 50, 75, 100):
        x = LABEL_WIDTH + PLOT_WIDTH * tick / 100
        parts.append(
            f'<line class="grid" x1="{x:.1f}" x2="{x:.1f}" y1="0" y2="{height - 18}"/>'
            f'<text class="tick" x="{x:.1f}" y="{height - 4}" text-anchor="middle">{tick}%</text>'
        )
    for i, model in enumerate(models):
        rate = compliance_rate(r for r in ctx.test_runs if r.model == model)
        y = i * (BAR_HEIGHT + BAR_GAP) + 4
        bar = PLOT_WIDTH * (rate or 0) / 100
        name = escape(model)
        parts.append(
            f'<text class="label" x="{LABEL_WIDTH - 8}" y="{y + BAR_HEIGHT * 0.7:.1f}" '
            f'text-anchor="end">{escape(excerpt(model, 28))}</text>'
            f'<rect class="bar" data-model="{name}" data-rate="{_attr_rate(rate)}" '
            f'x="{LABEL_WIDTH}" y="{y}" width="{bar:.1f}" height="{BAR_HEIGHT}" rx="3" '
            f'fill="{bar_color(rate)}"><title>{name}: {percent(rate)}</title></rect>'
            f'<text class="value" x="{LABEL_WIDTH + bar + 6:.1f}" '
            f'y="{y + BAR_HEIGHT * 0.7:.1f}">{percent(rate) if rate is not None else "n/a"}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _attr_rate(rate: float | None) -> str:
    return "" if rate is None else f"{rate:.1f}"


def heatmap(ctx: Context) -> str:
    """Rules down, models across; each cell the pass rate, colored by it."""
    models = ctx.models_run
    head = "".join(f'<th scope="col">{escape(m)}</th>' for m in models)
    rows = []
    for row in rule_rates(ctx):
        tag = ' <span class="tag">inverse</span>' if row.inverse else ""
        cells = "".join(
            f'<td class="heat" data-rate="{_attr_rate(row.rates[m])}" '
            f'style="background:{rate_color(row.rates[m])}" '
            f'title="{escape(m)}: {row.runs[m]} run(s)">{percent(row.rates[m])}'
            f"<small> ({row.runs[m]})</small></td>"
            for m in models
        )
        rows.append(
            f'<tr><th scope="row"><code>{escape(row.rule_id)}</code>{tag}</th>'
            f'<td class="rule-text">{escape(row.text)}</td>{cells}</tr>'
        )
    return (
        '<table id="heatmap" class="heatmap"><thead><tr><th scope="col">Rule</th>'
        f'<th scope="col">Text</th>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'
    )
