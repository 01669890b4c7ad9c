"""Charts of a query's answer as SVG, drawn here in Python: no JavaScript library, and a
test can count the marks (one `<rect class="mark">`, `<circle class="mark">` or
`<path class="mark">` per data point).

The chart types are ShopifyQL's VISUALIZE types (warehouse.query.shopifyql_schemas):
`line`, `bar`, `horizontal_bar`, `donut`, `histogram` (bars of the values as they come),
`single_stat` (the first value, large), and `table`, `list_with_dimension_values` and
`heatmap`, shown as the table itself (no chart). Without TYPE, ShopifyQL draws a time
series as a line and anything else as bars; so does this module.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal
from html import escape
from typing import Any

from warehouse.query.result import QueryResult

DRAWN = ("line", "bar", "horizontal_bar", "donut", "histogram", "single_stat")
WIDTH, HEIGHT = 720, 360
MARGIN_LEFT, MARGIN_BOTTOM, MARGIN_TOP, MARGIN_RIGHT = 72, 48, 16, 16
# Colours with at least 4.5:1 contrast on white (WCAG AA), one per series.
PALETTE = ("#1f5fa8", "#b3401b", "#2e7d32", "#6a3d9a", "#8a6d00")
MAX_POINTS = 500
TIME_NAMES = ("day", "week", "month", "quarter", "year", "hour", "hour_of_day", "day_of_week")


@dataclass(frozen=True)
class Chart:
    type: str
    svg: str
    points: int


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float | Decimal):
        return float(value)
    try:
        return float(str(value))
    except ValueError:
        return None


def default_type(result: QueryResult) -> str:
    first = result.columns[0]["name"] if result.columns else ""
    return "line" if first in TIME_NAMES else "bar"


def draw(result: QueryResult, chart_type: str | None) -> Chart | None:
    """The chart of `result` (None when the type is a table, or nothing is numeric)."""
    chart_type = chart_type or default_type(result)
    if chart_type not in DRAWN or not result.rows:
        return None
    names = [c["name"] for c in result.columns]
    titles = {c["name"]: c["title"] for c in result.columns}
    numeric = [n for n in names if any(_number(r.get(n)) is not None for r in result.rows[:50])]
    # The label is the first column that is not a measure: a dimension, or a period.
    labels_from = next((n for n in names if n not in numeric), None)
    measures = [n for n in numeric if n != labels_from]
    if not measures:
        return None
    rows = result.rows[:MAX_POINTS]
    labels = [
        str(r.get(labels_from, "")) if labels_from else str(i + 1) for i, r in enumerate(rows)
    ]
    series = [(titles[m], [_number(r.get(m)) or 0.0 for r in rows]) for m in measures]
    if chart_type == "single_stat":
        return _single_stat(series[0][0], series[0][1][0])
    if chart_type == "donut":
        return _donut(labels, series[0])
    if chart_type == "horizontal_bar":
        return _horizontal_bars(labels, series)
    if chart_type == "line":
        return _lines(labels, series)
    return _bars(labels, series, chart_type)


def _svg(body: list[str], title: str, kind: str, points: int, height: int = HEIGHT) -> Chart:
    svg = (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart chart-{kind}" role="img" '
        f'viewBox="0 0 {WIDTH} {height}" preserveAspectRatio="xMidYMid meet" '
        f'aria-label="{escape(title)}"><title>{escape(title)}</title>' + "".join(body) + "</svg>"
    )
    return Chart(kind, svg, points)


def _scale(values: list[float]) -> tuple[float, float]:
    low, high = min([0.0, *values]), max([0.0, *values])
    return (low, high if high > low else low + 1.0)


def _axis_labels(low: float, high: float, top: float, bottom: float) -> list[str]:
    out = []
    for step in range(5):
        value = low + (high - low) * step / 4
        y = bottom - (bottom - top) * step / 4
        out.append(
            f'<text x="{MARGIN_LEFT - 6}" y="{y + 4:.1f}" text-anchor="end" class="tick">'
            f"{value:,.6g}</text>"
            f'<line x1="{MARGIN_LEFT}" x2="{WIDTH - MARGIN_RIGHT}" y1="{y:.1f}" y2="{y:.1f}" '
            f'class="grid" stroke="#d0d0d0"/>'
        )
    return out


def _legend(series: list[tuple[str, list[float]]]) -> list[str]:
    return [
        f'<text x="{MARGIN_LEFT + 160 * i}" y="{HEIGHT - 6}" fill="{PALETTE[i % len(PALETTE)]}" '
        f'class="legend">■ {escape(name)}</text>'
        for i, (name, _) in enumerate(series)
    ]


def _x_labels(labels: list[str], xs: list[float]) -> list[str]:
    every = max(1, math.ceil(len(labels) / 8))
    return [
        f'<text x="{x:.1f}" y="{HEIGHT - MARGIN_BOTTOM + 16}" text-anchor="middle" '
        f'class="tick">{escape(label[:16])}</text>'
        for i, (label, x) in enumerate(zip(labels, xs, strict=True))
        if i % every == 0
    ]


def _bars(labels: list[str], series: list[tuple[str, list[float]]], kind: str) -> Chart:
    low, high = _scale([v for _, values in series for v in values])
    top, bottom = MARGIN_TOP, HEIGHT - MARGIN_BOTTOM
    plot = WIDTH - MARGIN_LEFT - MARGIN_RIGHT
    slot = plot / len(labels)
    width = max(1.0, slot * 0.8 / len(series))
    body = _axis_labels(low, high, top, bottom)
    points = 0
    for s, (name, values) in enumerate(series):
        for i, value in enumerate(values):
            y0 = bottom - (0 - low) / (high - low) * (bottom - top)
            y1 = bottom - (value - low) / (high - low) * (bottom - top)
            x = MARGIN_LEFT + slot * i + slot * 0.1 + width * s
            body.append(
                f'<rect class="mark" x="{x:.1f}" y="{min(y0, y1):.1f}" width="{width:.1f}" '
                f'height="{abs(y1 - y0):.1f}" fill="{PALETTE[s % len(PALETTE)]}">'
                f"<title>{escape(labels[i])}: {escape(name)} {value:,.6g}</title></rect>"
            )
            points += 1
    xs = [MARGIN_LEFT + slot * (i + 0.5) for i in range(len(labels))]
    body += _x_labels(labels, xs) + _legend(series)
    return _svg(body, f"{kind.replace('_', ' ')} chart", kind, points)


def _horizontal_bars(labels: list[str], series: list[tuple[str, list[float]]]) -> Chart:
    height = max(HEIGHT, 24 * len(labels) + MARGIN_TOP + MARGIN_BOTTOM)
    low, high = _scale([v for _, values in series for v in values])
    left, right = MARGIN_LEFT + 60, WIDTH - MARGIN_RIGHT
    slot = (height - MARGIN_TOP - MARGIN_BOTTOM) / len(labels)
    thick = max(1.0, slot * 0.8 / len(series))
    body: list[str] = []
    points = 0
    for i, label in enumerate(labels):
        y = MARGIN_TOP + slot * i
        body.append(
            f'<text x="{left - 6}" y="{y + slot / 2 + 4:.1f}" text-anchor="end" '
            f'class="tick">{escape(label[:20])}</text>'
        )
        for s, (name, values) in enumerate(series):
            x0 = left + (0 - low) / (high - low) * (right - left)
            x1 = left + (values[i] - low) / (high - low) * (right - left)
            body.append(
                f'<rect class="mark" x="{min(x0, x1):.1f}" y="{y + slot * 0.1 + thick * s:.1f}" '
                f'width="{abs(x1 - x0):.1f}" height="{thick:.1f}" '
                f'fill="{PALETTE[s % len(PALETTE)]}"><title>{escape(label)}: {escape(name)} '
                f"{values[i]:,.6g}</title></rect>"
            )
            points += 1
    return _svg(body, "horizontal bar chart", "horizontal_bar", points, height)


def _lines(labels: list[str], series: list[tuple[str, list[float]]]) -> Chart:
    low, high = _scale([v for _, values in series for v in values])
    top, bottom = MARGIN_TOP, HEIGHT - MARGIN_BOTTOM
    plot = WIDTH - MARGIN_LEFT - MARGIN_RIGHT
    step = plot / max(1, len(labels) - 1)
    xs = [
        MARGIN_LEFT + step * i if len(labels) > 1 else MARGIN_LEFT + plot / 2
        for i in range(len(labels))
    ]
    body = _axis_labels(low, high, top, bottom)
    points = 0
    for s, (name, values) in enumerate(series):
        colour = PALETTE[s % len(PALETTE)]
        ys = [bottom - (v - low) / (high - low) * (bottom - top) for v in values]
        corners = zip(xs, ys, strict=True)
        path = " ".join(f"{'L' if i else 'M'}{x:.1f},{y:.1f}" for i, (x, y) in enumerate(corners))
        body.append(
            f'<path class="line" d="{path}" fill="none" stroke="{colour}" stroke-width="2"/>'
        )
        for i, (x, y) in enumerate(zip(xs, ys, strict=True)):
            body.append(
                f'<circle class="mark" cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{colour}">'
                f"<title>{escape(labels[i])}: {escape(name)} {values[i]:,.6g}</title></circle>"
            )
            points += 1
    body += _x_labels(labels, xs) + _legend(series)
    return _svg(body, "line chart", "line", points)


def _donut(labels: list[str], series: tuple[str, list[float]]) -> Chart:
    name, values = series
    total = sum(v for v in values if v > 0) or 1.0
    cx, cy, outer, inner = WIDTH / 2, HEIGHT / 2, 140.0, 80.0
    angle = -math.pi / 2
    body: list[str] = []
    points = 0
    for i, value in enumerate(values):
        if value <= 0:
            continue
        sweep = min(value / total * 2 * math.pi, 2 * math.pi - 1e-6)
        end = angle + sweep
        large = 1 if sweep > math.pi else 0
        p = [
            (cx + outer * math.cos(angle), cy + outer * math.sin(angle)),
            (cx + outer * math.cos(end), cy + outer * math.sin(end)),
            (cx + inner * math.cos(end), cy + inner * math.sin(end)),
            (cx + inner * math.cos(angle), cy + inner * math.sin(angle)),
        ]
        (x0, y0), (x1, y1), (x2, y2), (x3, y3) = p
        d = (
            f"M{x0:.1f},{y0:.1f} A{outer},{outer} 0 {large} 1 {x1:.1f},{y1:.1f} "
            f"L{x2:.1f},{y2:.1f} A{inner},{inner} 0 {large} 0 {x3:.1f},{y3:.1f} Z"
        )
        body.append(
            f'<path class="mark" d="{d}" fill="{PALETTE[i % len(PALETTE)]}" stroke="#fff">'
            f"<title>{escape(labels[i])}: {escape(name)} {value:,.6g}</title></path>"
        )
        angle = end
        points += 1
    return _svg(body, "donut chart", "donut", points)


def _single_stat(name: str, value: float) -> Chart:
    body = [
        f'<text x="{WIDTH / 2}" y="{HEIGHT / 2}" text-anchor="middle" class="mark stat" '
        f'font-size="64">{value:,.6g}</text>'
        f'<text x="{WIDTH / 2}" y="{HEIGHT / 2 + 40}" text-anchor="middle">{escape(name)}</text>'
    ]
    return _svg(body, f"{name}: {value:,.6g}", "single_stat", 1)
