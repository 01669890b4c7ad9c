"""Every form Shopify's ShopifyQL reference (API version 2026-07) documents, one query each,
with the page it is documented on: it runs with the columns ShopifyQL gives it, or it is
refused with a diagnostic that says exactly why Quarry cannot answer it.

The figures themselves are checked against the pandas oracle in test_differential.py.
"""

from __future__ import annotations

from typing import Any

import duckdb
import pytest

from quarry.errors import InvalidQuery
from tests.warehouse.query.data import (
    run_public,
)
from warehouse.query import Limits
from warehouse.query.parser import parse

SYNTAX = "https://shopify.dev/docs/api/shopifyql/latest/syntax"
FROM_SHOW = f"{SYNTAX}/from-and-show"
WHERE = f"{SYNTAX}/where"
GROUP_BY = f"{SYNTAX}/group-by"
TIMESERIES = f"{SYNTAX}/timeseries"
DATES = f"{SYNTAX}/since-until-during"
COMPARE = f"{SYNTAX}/compare-to"
WITH = f"{SYNTAX}/with"
HAVING = f"{SYNTAX}/having"
ORDER_BY = f"{SYNTAX}/order-by"
LIMIT = f"{SYNTAX}/limit"
VISUALIZE = f"{SYNTAX}/visualize"
SALES = "https://shopify.dev/docs/api/shopifyql/latest/schemas/sales_revenue/sales"
RENAMES = (
    "https://shopify.dev/changelog/"
    "shopifyql-returns-fields-deprecated-and-replaced-with-sales-reversals-fields"
)
# ShopifyQL's orders dataset (the pre-2024-07 reference; no 2026-07 page for the orders,
# customers or products schemas is in the stored copies).
ORDERS_DATASET = "https://shopify.dev/api/shopifyql/datasets/orders-dataset"
# Shopify's own example app reads these generated columns by name.
DASHBOARD = "github:Shopify/example-shopifyql--sales-dashboard--react app/routes/app._index.jsx"
# A merchant's client code names the cost fields of the sales schema.
COST_CLIENT = "public client code: FROM sales SHOW cost_of_goods_sold WHERE cost_is_recorded"

W = "SINCE 2024-03-01 UNTIL 2024-03-31"

# (source, query, columns the result has, in order)
RUNS: list[tuple[str, str, list[str]]] = [
    # FROM and SHOW
    (FROM_SHOW, "FROM sales SHOW total_sales", ["total_sales"]),
    (FROM_SHOW, "FROM ORGANIZATION sales SHOW total_sales", ["total_sales"]),
    (
        FROM_SHOW,
        f'FROM sales SHOW net_sales AS revenue, orders AS "Order count" {W}',
        ["revenue", "Order count"],
    ),
    (FROM_SHOW, f"FROM sales SHOW (gross_sales + discounts) / orders AS aov {W}", ["aov"]),
    (
        FROM_SHOW,
        f"FROM sales SHOW sum(total_sales), count_distinct(order_id) {W}",
        ["sum_total_sales", "count_distinct_order_id"],
    ),
    (
        f"{SYNTAX}",
        f"FROM sales SHOW total_sales -- a comment\n/* and another */ {W}",
        ["total_sales"],
    ),
    # Clauses in any order (2026-07)
    (
        f"{SYNTAX}",
        f"FROM sales {W} GROUP BY store WITH TOTALS SHOW total_sales",
        ["store", "total_sales"],
    ),
    (
        f"{SYNTAX}",
        f"WITH TOTALS LIMIT 5 ORDER BY total_sales DESC SHOW total_sales FROM sales {W}",
        ["total_sales"],
    ),
    # WHERE
    (WHERE, f"FROM sales SHOW total_sales WHERE billing_country = 'US' {W}", ["total_sales"]),
    (WHERE, f"FROM sales SHOW total_sales WHERE billing_country != 'US' {W}", ["total_sales"]),
    (WHERE, f"FROM sales SHOW total_sales WHERE billing_country <> 'US' {W}", ["total_sales"]),
    # Ordered comparisons need an ordered dimension: in these datasets, the dates.
    (
        WHERE,
        f"FROM orders SHOW count(order_count) WHERE created_at > 2024-03-05 {W}",
        ["count_order_count"],
    ),
    (
        WHERE,
        f"FROM orders SHOW count(order_count) WHERE created_at >= 2024-03-05 "
        f"AND created_at < 2024-03-20 {W}",
        ["count_order_count"],
    ),
    (
        WHERE,
        f"FROM orders SHOW count(order_count) WHERE created_at <= 2024-03-05 "
        f"OR processed_at > 2024-03-25T12:00:00Z {W}",
        ["count_order_count"],
    ),
    (
        WHERE,
        f"FROM sales SHOW total_sales WHERE product_title IN ('Mug', 'Tee') {W}",
        ["total_sales"],
    ),
    (
        WHERE,
        f"FROM sales SHOW total_sales WHERE product_title NOT IN ('Mug') {W}",
        ["total_sales"],
    ),
    (
        WHERE,
        f"FROM orders SHOW count(order_count) WHERE created_at BETWEEN 2024-03-05 AND "
        f"2024-03-09 {W}",
        ["count_order_count"],
    ),
    (
        WHERE,
        f"FROM orders SHOW count(order_count) WHERE created_at NOT BETWEEN 2024-03-05 AND "
        f"2024-03-09 {W}",
        ["count_order_count"],
    ),
    (
        WHERE,
        f"FROM sales SHOW total_sales WHERE product_title STARTS WITH 'Mu' {W}",
        ["total_sales"],
    ),
    (
        WHERE,
        f"FROM sales SHOW total_sales WHERE product_title ENDS WITH 'ug' {W}",
        ["total_sales"],
    ),
    (
        WHERE,
        f"FROM sales SHOW total_sales WHERE product_title CONTAINS 'o' {W}",
        ["total_sales"],
    ),
    (
        WHERE,
        f"FROM sales SHOW total_sales WHERE product_title NOT CONTAINS 'o' {W}",
        ["total_sales"],
    ),
    (WHERE, f"FROM sales SHOW total_sales WHERE product_type IS NULL {W}", ["total_sales"]),
    (WHERE, f"FROM sales SHOW total_sales WHERE product_type IS NOT NULL {W}", ["total_sales"]),
    (WHERE, f"FROM sales SHOW total_sales WHERE cost_is_recorded IS TRUE {W}", ["total_sales"]),
    (
        WHERE,
        f"FROM sales SHOW total_sales WHERE order_cancelled IS NOT TRUE {W}",
        ["total_sales"],
    ),
    (WHERE, f"FROM sales SHOW total_sales WHERE cost_is_recorded = false {W}", ["total_sales"]),
    (
        WHERE,
        f"FROM sales SHOW total_sales WHERE NOT (store = 'Main Street' OR "
        f"billing_country = 'DE') {W}",
        ["total_sales"],
    ),
    # GROUP BY
    (
        GROUP_BY,
        f"FROM sales SHOW total_sales GROUP BY sales_channel {W}",
        ["sales_channel", "total_sales"],
    ),
    (
        GROUP_BY,
        f"FROM sales SHOW total_sales GROUP BY store, sales_channel {W}",
        ["store", "sales_channel", "total_sales"],
    ),
    (
        GROUP_BY,
        f"FROM sales SHOW total_sales GROUP BY TOP 3 product_title {W}",
        ["product_title", "total_sales"],
    ),
    (
        GROUP_BY,
        f"FROM sales SHOW total_sales GROUP BY ONLY TOP 3 product_title {W}",
        ["product_title", "total_sales"],
    ),
    (
        GROUP_BY,
        f"FROM sales SHOW total_sales GROUP BY store, TOP 2 product_title OVERALL {W}",
        ["store", "product_title", "total_sales"],
    ),
    # Without OVERALL, TOP ranks within each value of the dimensions grouped before it.
    (
        GROUP_BY,
        f"FROM sales SHOW total_sales GROUP BY store, TOP 2 product_title {W}",
        ["store", "product_title", "total_sales"],
    ),
    (
        GROUP_BY,
        f"FROM sales SHOW total_sales GROUP BY store, ONLY TOP 2 product_title {W}",
        ["store", "product_title", "total_sales"],
    ),
    (GROUP_BY, f"FROM sales SHOW total_sales GROUP BY month {W}", ["month", "total_sales"]),
    (
        GROUP_BY,
        f"FROM sales SHOW product_title AS product, total_sales GROUP BY product {W}",
        ["product", "total_sales"],
    ),
    (GROUP_BY, f"FROM sales SHOW day AS d, total_sales GROUP BY day {W}", ["d", "total_sales"]),
    (
        GROUP_BY,
        f"FROM sales SHOW total_sales GROUP BY week, day_of_week {W}",
        ["week", "day_of_week", "total_sales"],
    ),
    (
        GROUP_BY,
        f"FROM sales SHOW total_sales TIMESERIES day GROUP BY hour_of_day {W}",
        ["day", "hour_of_day", "total_sales"],
    ),
    (
        GROUP_BY,
        f"FROM orders SHOW count(order_count) GROUP BY store {W}",
        ["store", "count_order_count"],
    ),
    # Record datasets answer to the sales schema's names for the same things.
    (GROUP_BY, f"FROM orders SHOW orders GROUP BY order_id {W} LIMIT 3", ["order_id", "orders"]),
    (GROUP_BY, f"FROM orders SHOW count(orders) GROUP BY store {W}", ["store", "count_orders"]),
    (
        ORDERS_DATASET,
        f"FROM orders SHOW sum(ordered_product_quantity), additional_fees, discounts, duties "
        f"GROUP BY billing_country {W}",
        [
            "billing_country",
            "sum_ordered_product_quantity",
            "additional_fees",
            "discounts",
            "duties",
        ],
    ),
    # TIMESERIES
    *[
        (TIMESERIES, f"FROM sales SHOW total_sales TIMESERIES {g} {w}", [g, "total_sales"])
        for g, w in (
            ("second", "SINCE -10s UNTIL now"),
            ("minute", "SINCE -30min UNTIL now"),
            ("hour", "SINCE -24h UNTIL now"),
            ("day", W),
            ("week", W),
            ("month", "SINCE -3m"),
            ("quarter", "SINCE -4q"),
            ("year", "SINCE -2y"),
            ("hour_of_day", W),
            ("day_of_week", W),
            ("week_of_year", W),
            ("month_of_year", W),
        )
    ],
    # SINCE, UNTIL, DURING
    (DATES, "FROM sales SHOW total_sales SINCE 2024-03-01", ["total_sales"]),
    (
        DATES,
        "FROM sales SHOW total_sales SINCE 2024-03-01T10:00:00 UNTIL 2024-03-02T10:00:00",
        ["total_sales"],
    ),
    *[
        (DATES, f"FROM sales SHOW total_sales SINCE {o} UNTIL now", ["total_sales"])
        for o in ("-10s", "-30min", "-24h", "-30d", "-2w", "-3m", "-4q", "-1y")
    ],
    *[
        (DATES, f"FROM sales SHOW total_sales DURING {r}", ["total_sales"])
        for r in (
            "today",
            "yesterday",
            "this_week",
            "this_month",
            "this_quarter",
            "this_year",
            "last_week",
            "last_month",
            "last_quarter",
            "last_year",
            "this_weekend",
            "last_weekend",
            "bfcm2023",
        )
    ],
    *[
        (DATES, f"FROM sales SHOW total_sales SINCE {f} UNTIL now", ["total_sales"])
        for f in (
            "startOfDay(-30d)",
            "startOfWeek(-1w)",
            "startOfMonth(0m)",
            "startOfMonth(-1m)",
            "startOfQuarter(-1q)",
            "startOfYear(0y)",
            "startOfHour(-2h)",
            "startOfMinute(-30min)",
        )
    ],
    (
        DATES,
        "FROM sales SHOW total_sales SINCE startOfMonth(-1m) UNTIL endOfMonth(-1m)",
        ["total_sales"],
    ),
    (
        DATES,
        "FROM sales SHOW total_sales SINCE startOfDay(-30d) UNTIL endOfDay(-1d)",
        ["total_sales"],
    ),
    # COMPARE TO
    *[
        (
            COMPARE,
            f"FROM sales SHOW total_sales {W} COMPARE TO {c}",
            ["total_sales", f"comparison_total_sales__{c}"],
        )
        for c in (
            "previous_period",
            "previous_year",
            "previous_year_match_day_of_week",
            "previous_quarter",
            "previous_month",
            "previous_week",
            "previous_day",
            "previous_hour",
            "previous_minute",
            "previous_second",
        )
    ],
    (
        COMPARE,
        f"FROM sales SHOW total_sales {W} COMPARE TO 2023-03-01",
        ["total_sales", "comparison_total_sales__20230301"],
    ),
    (
        COMPARE,
        f"FROM sales SHOW total_sales {W} COMPARE TO last_year",
        ["total_sales", "comparison_total_sales__last_year"],
    ),
    (
        COMPARE,
        f"FROM sales SHOW total_sales {W} COMPARE TO startOfQuarter(-3q)",
        ["total_sales", "comparison_total_sales__startOfQuarter_sub_3q"],
    ),
    (
        COMPARE,
        f"FROM sales SHOW total_sales {W} COMPARE TO -14d",
        ["total_sales", "comparison_total_sales__sub_14d"],
    ),
    (
        COMPARE,
        f"FROM sales SHOW total_sales {W} COMPARE TO startOfQuarter(-3q) UNTIL endOfQuarter(-3q)",
        ["total_sales", "comparison_total_sales__startOfQuarter_sub_3q_until_endOfQuarter_sub_3q"],
    ),
    (
        COMPARE,
        f"FROM sales SHOW total_sales {W} COMPARE TO previous_period, previous_year",
        [
            "total_sales",
            "comparison_total_sales__previous_period",
            "comparison_total_sales__previous_year",
        ],
    ),
    # WITH
    (
        WITH,
        f"FROM sales SHOW total_sales GROUP BY store {W} WITH TOTALS",
        ["store", "total_sales"],
    ),
    (
        WITH,
        f"FROM sales SHOW total_sales GROUP BY store, sales_channel {W} WITH GROUP_TOTALS",
        ["store", "sales_channel", "total_sales", "total_sales__store_totals"],
    ),
    (
        WITH,
        f"FROM sales SHOW total_sales GROUP BY store, TOP 2 product_title {W} WITH GROUP_TOTALS",
        ["store", "product_title", "total_sales", "total_sales__store_totals"],
    ),
    (
        DASHBOARD,
        f"FROM sales SHOW total_sales TIMESERIES day {W} COMPARE TO previous_period "
        "WITH TOTALS, PERCENT_CHANGE",
        [
            "day",
            "total_sales",
            "comparison_total_sales__previous_period",
            "percent_change_total_sales__previous_period",
        ],
    ),
    (
        WITH,
        f"FROM sales SHOW total_sales TIMESERIES day {W} WITH PERCENT_CHANGE",
        ["day", "total_sales"],
    ),
    (
        WITH,
        f"FROM sales SHOW total_sales, average_order_value TIMESERIES week {W} "
        "WITH CUMULATIVE_VALUES",
        ["week", "total_sales", "average_order_value", "total_sales__cumulative"],
    ),
    (WITH, f"FROM sales SHOW total_sales {W} WITH CURRENCY 'EUR'", ["total_sales"]),
    (WITH, f"FROM sales SHOW total_sales {W} WITH TIMEZONE 'Europe/Berlin'", ["total_sales"]),
    # HAVING
    (
        HAVING,
        f"FROM sales SHOW total_sales GROUP BY product_title {W} HAVING total_sales > 100",
        ["product_title", "total_sales"],
    ),
    (
        HAVING,
        f"FROM sales SHOW total_sales AS ts GROUP BY store {W} HAVING ts > 100 AND ts < 1000000",
        ["store", "ts"],
    ),
    (
        COMPARE,
        f"FROM sales SHOW total_sales GROUP BY store {W} COMPARE TO previous_year "
        "HAVING comparison_total_sales__previous_year > 0",
        ["store", "total_sales", "comparison_total_sales__previous_year"],
    ),
    # ORDER BY, LIMIT, OFFSET
    (
        ORDER_BY,
        f"FROM sales SHOW total_sales, orders GROUP BY store {W} "
        "ORDER BY orders DESC, total_sales ASC",
        ["store", "total_sales", "orders"],
    ),
    (
        LIMIT,
        f"FROM sales SHOW total_sales GROUP BY product_title {W} LIMIT 3 OFFSET 2",
        ["product_title", "total_sales"],
    ),
    (
        LIMIT,
        f"FROM sales SHOW total_sales GROUP BY order_id {W} LIMIT 20000",
        ["order_id", "total_sales"],
    ),
    # VISUALIZE
    (
        VISUALIZE,
        f"FROM sales SHOW total_sales TIMESERIES day {W} VISUALIZE total_sales TYPE line",
        ["day", "total_sales"],
    ),
    (
        VISUALIZE,
        f"FROM sales TIMESERIES day {W} VISUALIZE total_sales, orders TYPE bar",
        ["day", "total_sales", "orders"],
    ),
    (
        VISUALIZE,
        f"FROM sales SHOW total_sales, orders TIMESERIES day {W} "
        "VISUALIZE total_sales TYPE line, orders TYPE bar MAX 10 ANNOTATE campaign",
        ["day", "total_sales", "orders"],
    ),
    # The sales schema
    (
        SALES,
        f"FROM sales SHOW customers GROUP BY customer_type {W}",
        ["customer_type", "customers"],
    ),
    (
        SALES,
        f"FROM sales SHOW orders GROUP BY shipping_country, shipping_region, shipping_city {W}",
        ["shipping_country", "shipping_region", "shipping_city", "orders"],
    ),
    (
        SALES,
        f"FROM sales SHOW orders, discounts GROUP BY discount_code {W}",
        ["discount_code", "orders", "discounts"],
    ),
    (
        SALES,
        f"FROM sales SHOW total_sales GROUP BY order_cancelled {W}",
        ["order_cancelled", "total_sales"],
    ),
    (
        COST_CLIENT,
        f"FROM sales SHOW cost_of_goods_sold, gross_profit, gross_margin, "
        f"net_sales_with_cost_recorded WHERE cost_is_recorded = true {W}",
        ["cost_of_goods_sold", "gross_profit", "gross_margin", "net_sales_with_cost_recorded"],
    ),
    (
        SALES,
        f"FROM sales SHOW additional_fees, duties, shipping_charges {W}",
        ["additional_fees", "duties", "shipping_charges"],
    ),
    (
        RENAMES,
        f"FROM sales SHOW sales_reversals, net_sales_reversals, shipping_reversals, "
        f"tax_reversals, total_sales_reversals, reversed_quantity {W}",
        [
            "sales_reversals",
            "net_sales_reversals",
            "shipping_reversals",
            "tax_reversals",
            "total_sales_reversals",
            "reversed_quantity",
        ],
    ),
    (
        RENAMES,
        f"FROM sales SHOW returns, net_returns, shipping_returned, taxes_returned, "
        f"total_returns, quantity_returned {W}",
        [
            "returns",
            "net_returns",
            "shipping_returned",
            "taxes_returned",
            "total_returns",
            "quantity_returned",
        ],
    ),
]

# (source, query, what the diagnostic says): documented forms Quarry cannot answer.
REFUSED: list[tuple[str, str, str]] = [
    (
        FROM_SHOW,
        "FROM sales, sessions SHOW total_sales, sessions",
        "Quarry answers from one dataset per query",
    ),
    (
        WHERE,
        "FROM sales SHOW total_sales WHERE customer_id MATCHES (segment = 'vip')",
        "MATCHES filters by related records",
    ),
    (
        COMPARE,
        "FROM sales SHOW total_sales COMPARE TO TARGETS",
        "metric targets set in Shopify's admin, which Quarry does not sync",
    ),
    *[
        (WITH, f"FROM sales SHOW total_sales WITH {m}", "marketing touchpoints")
        for m in (
            "FIRST_CLICK_ATTRIBUTION",
            "LAST_CLICK_ATTRIBUTION",
            "LAST_NON_DIRECT_CLICK_ATTRIBUTION",
            "ANY_CLICK_ATTRIBUTION",
            "LINEAR_ATTRIBUTION",
        )
    ],
    (
        WITH,
        "FROM sales SHOW total_sales GROUP BY store WITH GROUP_TOTALS",
        "needs at least two dimensions",
    ),
    (
        WITH,
        "FROM sales SHOW average_order_value TIMESERIES day WITH CUMULATIVE_VALUES",
        "applies to additive metrics",
    ),
    (
        RENAMES,
        "FROM sales SHOW gross_sales_reversals",
        "reversals are modelled net of discounts only",
    ),
    (RENAMES, "FROM sales SHOW discount_reversals", "reversals are modelled net of discounts"),
    (SALES, "FROM sales SHOW sessions", "sessions and marketing attribution are not synced"),
    (DATES, "FROM sales SHOW total_sales SINCE 3d", "Offsets count back from now: write -3d"),
    # GROUP_TOTALS with COMPARE TO runs since issue 31 (test_shopifyql_schema.py).
    *[
        (ORDERS_DATASET, f"FROM orders SHOW {f}", f"{f} is a field of ShopifyQL's orders schema")
        for f in (
            "gross_sales",
            "net_sales",
            "returned_product_quantity",
            "net_product_quantity",
            "shipping",
            "taxes",
        )
    ],
]


def run(con: duckdb.DuckDBPyConnection, text: str) -> dict[str, Any]:
    return run_public(con, text, limits=Limits(max_groups=100_000))


@pytest.mark.parametrize(("source", "text", "columns"), RUNS, ids=[r[1][:60] for r in RUNS])
def test_documented_form_runs(
    con: duckdb.DuckDBPyConnection, source: str, text: str, columns: list[str]
) -> None:
    body = run(con, text)
    assert [c["name"] for c in body["columns"]] == columns, source
    assert all(set(row) == set(columns) for row in body["rows"]), source


@pytest.mark.parametrize(("source", "text", "message"), REFUSED, ids=[r[1][:60] for r in REFUSED])
def test_documented_form_refused_with_the_reason(
    con: duckdb.DuckDBPyConnection, source: str, text: str, message: str
) -> None:
    with pytest.raises(InvalidQuery) as exc:
        run(con, text)
    assert any(message in str(e["message"]) for e in exc.value.errors), (source, exc.value.errors)


def test_top_without_overall_keeps_n_values_per_preceding_group(
    con: duckdb.DuckDBPyConnection,
) -> None:
    """GROUP BY a, TOP n b: at most n values of b for each a, plus each a's Other row
    (GROUP_BY); with OVERALL the n values are the same for every a."""
    within = run(con, f"FROM sales SHOW total_sales GROUP BY store, TOP 1 product_title {W}")
    overall = run(
        con, f"FROM sales SHOW total_sales GROUP BY store, ONLY TOP 1 product_title OVERALL {W}"
    )
    chosen = [r for r in within["rows"] if r["product_title"] != "Other"]
    stores = {r["store"] for r in within["rows"]}
    assert sorted(r["store"] for r in chosen) == sorted(stores), GROUP_BY
    assert {r["store"] for r in within["rows"] if r["product_title"] == "Other"} == stores
    assert len({r["product_title"] for r in overall["rows"]}) == 1, GROUP_BY
    assert len({r["product_title"] for r in chosen}) > 1, GROUP_BY


@pytest.mark.parametrize("text", [r[1] for r in REFUSED if "SINCE 3d" not in r[1]])
def test_refused_forms_parse(text: str) -> None:
    """What Quarry refuses it still reads: the refusal is about data, not syntax."""
    assert parse(text)[1] == []


def test_day_of_week_is_numbered_as_iso_8601(con: duckdb.DuckDBPyConnection) -> None:
    """ShopifyQL numbers weekdays; Shopify states its numbering as ISO 8601, 1 = Monday
    (docs/query-language.md, "What differs from ShopifyQL"). 2024-03-04 was a Monday and
    2024-03-10 a Sunday. WEEK_START orders the rows, not their numbers."""
    monday = "SINCE 2024-03-04 UNTIL 2024-03-04"
    body = run(con, f"FROM sales SHOW total_sales TIMESERIES day_of_week {monday}")
    column = next(c for c in body["columns"] if c["name"] == "day_of_week")
    assert column["type"] == "number"
    filled = {r["day_of_week"]: r["total_sales"] for r in body["rows"]}
    assert list(filled) == [1, 2, 3, 4, 5, 6, 7]
    busy = run(con, f"FROM sales SHOW total_sales GROUP BY day_of_week {monday}")["rows"]
    assert [r["day_of_week"] for r in busy] == [1]
    sunday = run(
        con, "FROM sales SHOW total_sales GROUP BY day_of_week SINCE 2024-03-10 UNTIL 2024-03-10"
    )["rows"]
    assert [r["day_of_week"] for r in sunday] == [7]
    week = run(
        con, f"FROM sales SHOW total_sales TIMESERIES day_of_week {W} WITH WEEK_START 'sunday'"
    )
    assert [r["day_of_week"] for r in week["rows"]] == [7, 1, 2, 3, 4, 5, 6]
