"""The SVG charts: one mark per data point and series for every drawn type, the table
types drawn as no chart, text escaped."""

from __future__ import annotations

from decimal import Decimal
from xml.etree import ElementTree

import pytest

from api.console.charts import DRAWN, draw
from warehouse.query.result import QueryResult

SVG = "{http://www.w3.org/2000/svg}"


def _result(rows: list[dict[str, object]], *measures: str) -> QueryResult:
    columns = [{"name": "product", "title": "Product <b>", "type": "string"}] + [
        {"name": m, "title": m.title(), "type": "money"} for m in measures
    ]
    return QueryResult(columns, rows, "USD", "UTC", {"gte": "", "lt": ""})


ROWS = [
    {"product": "Tee", "total_sales": Decimal("10.50"), "orders": 2},
    {"product": "<script>alert(1)</script>", "total_sales": Decimal("3"), "orders": 1},
    {"product": "Mug", "total_sales": Decimal("-1.25"), "orders": 1},
]


def _marks(svg: str) -> int:
    tree = ElementTree.fromstring(svg)  # well-formed XML, so escaped
    return sum(1 for e in tree.iter() if "mark" in (e.get("class") or "").split())


@pytest.mark.parametrize("kind", ["line", "bar", "horizontal_bar", "histogram"])
def test_one_mark_per_point_of_each_series(kind: str) -> None:
    chart = draw(_result(ROWS, "total_sales", "orders"), kind)
    assert chart is not None and chart.type == kind
    assert _marks(chart.svg) == chart.points == 2 * len(ROWS)
    assert "<script>" not in chart.svg


def test_a_donut_draws_the_positive_shares_and_a_single_stat_one_value() -> None:
    donut = draw(_result(ROWS, "total_sales"), "donut")
    assert donut is not None and _marks(donut.svg) == 2  # -1.25 has no share
    stat = draw(_result(ROWS, "total_sales"), "single_stat")
    assert stat is not None and _marks(stat.svg) == 1 and "10.5" in stat.svg


def test_table_types_and_answers_without_numbers_draw_nothing() -> None:
    for kind in ("table", "list_with_dimension_values", "heatmap"):
        assert kind not in DRAWN
        assert draw(_result(ROWS, "total_sales"), kind) is None
    assert draw(_result([{"product": "Tee"}]), "bar") is None
    assert draw(_result([], "total_sales"), "bar") is None


def test_without_a_type_a_time_series_is_a_line_and_the_rest_bars() -> None:
    series = QueryResult(
        [{"name": "day", "title": "Day", "type": "date"},
         {"name": "total_sales", "title": "Total sales", "type": "money"}],
        [{"day": "2024-03-01", "total_sales": 1}, {"day": "2024-03-02", "total_sales": 2}],
        "USD", "UTC", {"gte": "", "lt": ""},
    )  # fmt: skip
    line = draw(series, None)
    assert line is not None and line.type == "line"
    bars = draw(_result(ROWS, "total_sales"), None)
    assert bars is not None and bars.type == "bar"
