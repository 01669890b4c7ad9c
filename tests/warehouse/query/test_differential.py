"""Differential suite: each query's result against an independent computation in pandas
(tests/warehouse/query/data.py) on the same hand-made rows."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

import duckdb
import pytest

from tests.warehouse.query.data import (
    ACCOUNT_ZONE,
    BERLIN,
    NOW,
    NY,
    STORES,
    TOKYO,
    bucket_of,
    expected,
    frame,
    local,
    order_rows,
    run_public,
)
from warehouse.query import run_query

DF = frame()
ORDERS_DF = frame(order_rows())
TS = ("total_sales", "sum", "total_sales")
NET = ("net_sales", "sum", "net_sales")
ORDERS = ("orders", "orders", "")
MARCH = {"gte": local(2024, 3, 1), "lt": local(2024, 4, 1)}
M = "SINCE 2024-03-01 UNTIL 2024-03-31"


run = run_public


def canon(rows: list[dict[str, Any]]) -> list[tuple[tuple[str, str], ...]]:
    def value(v: Any) -> str:
        if isinstance(v, (int, Decimal)) and not isinstance(v, bool):
            return str(Decimal(v).normalize())
        return str(v)

    return sorted(tuple(sorted((k, value(v)) for k, v in r.items())) for r in rows)


def days(first: date, last: date) -> list[str]:
    return [(first + timedelta(days=k)).isoformat() for k in range((last - first).days + 1)]


def filled(
    rows: list[dict[str, Any]], key: str, buckets: list[Any], zeros: dict[str, Any]
) -> list[dict[str, Any]]:
    have = {r[key] for r in rows}
    return rows + [{key: b, **zeros} for b in buckets if b not in have]


CASES: list[tuple[str, str, dict[str, Any]]] = [
    # id, query, oracle arguments (rows compared unordered)
    ("total_usd", f"FROM sales SHOW total_sales {M}", {**MARCH, "metrics": [TS]}),
    (
        "total_eur",
        f"FROM sales SHOW total_sales {M} WITH CURRENCY 'EUR'",
        {**MARCH, "metrics": [TS], "currency": "EUR"},
    ),
    (
        "total_jpy",
        f"FROM sales SHOW total_sales, net_sales {M} WITH CURRENCY 'JPY'",
        {**MARCH, "metrics": [TS, NET], "currency": "JPY"},
    ),
    (
        "by_store",
        f"FROM sales SHOW total_sales GROUP BY store {M}",
        {**MARCH, "metrics": [TS], "group": ["store"]},
    ),
    (
        "by_product",
        f"FROM sales SHOW net_sales, orders GROUP BY product_title {M}",
        {**MARCH, "metrics": [NET, ORDERS], "group": ["product_title"]},
    ),
    (
        "count_distinct",
        f"FROM sales SHOW count_distinct(customer_id) GROUP BY store {M}",
        {
            **MARCH,
            "metrics": [("count_distinct_customer_id", "count_distinct", "customer_id")],
            "group": ["store"],
        },
    ),
    (
        "count_distinct_analytics_spelling",
        f"FROM sales SHOW count(DISTINCT store_id) GROUP BY sales_channel {M}",
        {
            **MARCH,
            "metrics": [("count_distinct_store_id", "count_distinct", "store_id")],
            "group": ["sales_channel"],
        },
    ),
    (
        "median",
        f"FROM sales SHOW median(total_sales) GROUP BY sales_channel {M}",
        {
            **MARCH,
            "metrics": [("median_total_sales", "median", "total_sales")],
            "group": ["sales_channel"],
        },
    ),
    (
        "avg",
        f"FROM sales SHOW avg(gross_sales) GROUP BY store {M}",
        {**MARCH, "metrics": [("avg_gross_sales", "avg", "gross_sales")], "group": ["store"]},
    ),
    (
        "min_max",
        f"FROM sales SHOW min(total_sales), max(total_sales) {M}",
        {
            **MARCH,
            "metrics": [
                ("min_total_sales", "min", "total_sales"),
                ("max_total_sales", "max", "total_sales"),
            ],
        },
    ),
    (
        "quantities",
        f"FROM sales SHOW net_items_sold, sum(ordered_item_quantity) {M}",
        {
            **MARCH,
            "metrics": [
                ("net_items_sold", "sum", "net_items_sold"),
                ("sum_ordered_item_quantity", "sum", "ordered_item_quantity"),
            ],
        },
    ),
    (
        "count",
        f"FROM sales SHOW count(product_title) GROUP BY store {M}",
        {
            **MARCH,
            "metrics": [("count_product_title", "count", "product_title")],
            "group": ["store"],
        },
    ),
    (
        "ny_dst_days",
        "FROM sales SHOW total_sales GROUP BY day SINCE 2024-03-08 UNTIL 2024-03-14",
        {"gte": local(2024, 3, 8), "lt": local(2024, 3, 15), "metrics": [TS], "time": "day"},
    ),
    (
        "berlin_dst_days",
        "FROM sales SHOW total_sales GROUP BY day SINCE 2024-03-28 "
        "UNTIL 2024-04-03 WITH TIMEZONE 'Europe/Berlin'",
        {
            "gte": local(2024, 3, 28, BERLIN),
            "lt": local(2024, 4, 4, BERLIN),
            "metrics": [TS],
            "time": "day",
            "zone": BERLIN,
        },
    ),
    (
        "berlin_fall_days",
        "FROM sales SHOW total_sales, orders GROUP BY day SINCE 2024-10-24 "
        "UNTIL 2024-10-30 WITH TIMEZONE 'Europe/Berlin'",
        {
            "gte": local(2024, 10, 24, BERLIN),
            "lt": local(2024, 10, 31, BERLIN),
            "metrics": [TS, ORDERS],
            "time": "day",
            "zone": BERLIN,
        },
    ),
    (
        "ny_fall_hours",
        "FROM sales SHOW total_sales GROUP BY hour DURING 2024-11-03",
        {"gte": local(2024, 11, 3), "lt": local(2024, 11, 4), "metrics": [TS], "time": "hour"},
    ),
    (
        "ny_spring_hours",
        "FROM sales SHOW orders GROUP BY hour DURING 2024-03-10",
        {"gte": local(2024, 3, 10), "lt": local(2024, 3, 11), "metrics": [ORDERS], "time": "hour"},
    ),
    (
        "weeks",
        f"FROM sales SHOW total_sales GROUP BY week {M}",
        {**MARCH, "metrics": [TS], "time": "week"},
    ),
    (
        "weeks_sunday",
        f"FROM sales SHOW total_sales GROUP BY week {M} WITH WEEK_START 'sunday'",
        {**MARCH, "metrics": [TS], "time": "week", "week_start": 6},
    ),
    (
        "months",
        "FROM sales SHOW total_sales, orders GROUP BY month SINCE 2024-02-01 UNTIL 2024-04-15",
        {
            "gte": local(2024, 2, 1),
            "lt": local(2024, 4, 16),
            "metrics": [TS, ORDERS],
            "time": "month",
        },
    ),
    (
        "quarter_year",
        "FROM sales SHOW total_sales GROUP BY quarter SINCE 2023-01-01 UNTIL 2024-12-31",
        {"gte": local(2023, 1, 1), "lt": local(2025, 1, 1), "metrics": [TS], "time": "quarter"},
    ),
    (
        "hour_of_day",
        f"FROM sales SHOW orders GROUP BY hour_of_day {M}",
        {**MARCH, "metrics": [ORDERS], "time": "hour_of_day"},
    ),
    (
        "day_of_week",
        f"FROM sales SHOW total_sales GROUP BY day_of_week {M}",
        {**MARCH, "metrics": [TS], "time": "day_of_week"},
    ),
    (
        "month_of_year",
        "FROM sales SHOW orders GROUP BY month_of_year SINCE 2023-01-01 UNTIL 2024-12-31",
        {
            "gte": local(2023, 1, 1),
            "lt": local(2025, 1, 1),
            "metrics": [ORDERS],
            "time": "month_of_year",
        },
    ),
    (
        "tokyo_zone_days",
        "FROM sales SHOW total_sales GROUP BY day SINCE 2024-03-01 "
        "UNTIL 2024-03-07 WITH TIMEZONE 'Asia/Tokyo'",
        {
            "gte": local(2024, 3, 1, TOKYO),
            "lt": local(2024, 3, 8, TOKYO),
            "metrics": [TS],
            "time": "day",
            "zone": TOKYO,
        },
    ),
    (
        "where_eq",
        f"FROM sales SHOW total_sales WHERE billing_country = 'US' {M}",
        {**MARCH, "metrics": [TS], "where": lambda r: r["billing_country"] == "US"},
    ),
    (
        "where_in",
        f"FROM sales SHOW total_sales GROUP BY billing_country "
        f"WHERE billing_country IN ('US', 'DE') {M}",
        {
            **MARCH,
            "metrics": [TS],
            "group": ["billing_country"],
            "where": lambda r: r["billing_country"] in ("US", "DE"),
        },
    ),
    (
        "where_not_in_keeps_nulls",
        f"FROM sales SHOW total_sales WHERE billing_country NOT IN ('US', 'DE') {M}",
        {**MARCH, "metrics": [TS], "where": lambda r: r["billing_country"] not in ("US", "DE")},
    ),
    (
        "where_not_equal_keeps_nulls",
        f"FROM sales SHOW orders WHERE product_title != 'Mug' {M}",
        {**MARCH, "metrics": [ORDERS], "where": lambda r: r["product_title"] != "Mug"},
    ),
    (
        "where_between",
        f"FROM sales SHOW total_sales WHERE product_title BETWEEN 'Bag' AND 'Mug' {M}",
        {
            **MARCH,
            "metrics": [TS],
            "where": lambda r: (
                r["product_title"] is not None and "Bag" <= r["product_title"] <= "Mug"
            ),
        },
    ),
    (
        "where_starts",
        f"FROM sales SHOW total_sales WHERE product_title STARTS WITH 'h' {M}",
        {
            **MARCH,
            "metrics": [TS],
            "where": lambda r: (r["product_title"] or "").lower().startswith("h"),
        },
    ),
    (
        "where_ends",
        f"FROM sales SHOW total_sales WHERE sales_channel ENDS WITH 'STORE' {M}",
        {**MARCH, "metrics": [TS], "where": lambda r: r["sales_channel"].endswith("Store")},
    ),
    (
        "where_contains",
        f"FROM sales SHOW total_sales WHERE product_title CONTAINS 'o' {M}",
        {**MARCH, "metrics": [TS], "where": lambda r: "o" in (r["product_title"] or "")},
    ),
    (
        "where_not_contains",
        f"FROM sales SHOW total_sales WHERE product_title NOT CONTAINS 'o' {M}",
        {**MARCH, "metrics": [TS], "where": lambda r: "o" not in (r["product_title"] or "")},
    ),
    (
        "where_null",
        f"FROM sales SHOW orders WHERE customer_id IS NULL {M}",
        {**MARCH, "metrics": [ORDERS], "where": lambda r: r["customer_id"] is None},
    ),
    (
        "where_bool",
        f"FROM sales SHOW total_sales WHERE (billing_country = 'US' OR "
        f"billing_country = 'CA') AND NOT product_title IS NULL {M}",
        {
            **MARCH,
            "metrics": [TS],
            "where": lambda r: (
                r["billing_country"] in ("US", "CA") and r["product_title"] is not None
            ),
        },
    ),
    (
        "store_in",
        f"FROM sales SHOW total_sales GROUP BY store WHERE store IN ('Main Street', "
        f"'Tokyo Corner') {M}",
        {**MARCH, "metrics": [TS], "group": ["store"], "stores": ["st_main", "st_tokyo"]},
    ),
    (
        "empty_window",
        "FROM sales SHOW total_sales, orders, median(total_sales) "
        "SINCE 2024-01-01 UNTIL 2024-01-31",
        {
            "gte": local(2024, 1, 1),
            "lt": local(2024, 2, 1),
            "metrics": [TS, ORDERS, ("median_total_sales", "median", "total_sales")],
        },
    ),
    (
        "records",
        "FROM orders SHOW order_count, total_price GROUP BY financial_status "
        "SINCE 2024-03-01 UNTIL 2024-04-10",
        {
            "gte": local(2024, 3, 1),
            "lt": local(2024, 4, 11),
            "metrics": [("order_count", "count", "id"), ("total_price", "sum", "total_price")],
            "group": ["financial_status"],
            "time_field": "created_at",
            "df": ORDERS_DF,
        },
    ),
    (
        "default_window",
        "FROM sales SHOW total_sales",
        {"gte": local(2024, 3, 17), "lt": local(2024, 4, 16), "metrics": [TS]},
    ),
    (
        "since_offset",
        "FROM sales SHOW total_sales GROUP BY day SINCE -7d",
        {"gte": local(2024, 4, 8), "lt": local(2024, 4, 16), "metrics": [TS], "time": "day"},
    ),
    (
        "during_last_month",
        "FROM sales SHOW total_sales, orders GROUP BY store DURING last_month",
        {**MARCH, "metrics": [TS, ORDERS], "group": ["store"]},
    ),
]


@pytest.mark.parametrize(("name", "text", "oracle"), CASES, ids=[c[0] for c in CASES])
def test_matches_pandas(
    con: duckdb.DuckDBPyConnection, name: str, text: str, oracle: dict[str, Any]
) -> None:
    kw = {k: v for k, v in oracle.items()}
    stores = kw.pop("stores", None)
    df = kw.pop("df", DF)
    got = run(con, text)
    want = expected(df, **kw) if stores is None else expected(df, stores=stores, **kw)
    if name == "empty_window":
        want = [{"total_sales": Decimal("0.00"), "orders": 0, "median_total_sales": None}]
    assert canon(got["rows"]) == canon(want)
    assert got["window"] == {
        "gte": oracle["gte"].isoformat().replace("+00:00", "Z"),
        "lt": oracle["lt"].isoformat().replace("+00:00", "Z"),
    }


def test_arithmetic(con: duckdb.DuckDBPyConnection) -> None:
    got = run(
        con,
        f"FROM sales SHOW (gross_sales + discounts) / orders AS aov, "
        f"average_order_value, net_sales - returns AS before_returns {M}",
    )["rows"][0]
    parts = expected(
        DF,
        **MARCH,
        metrics=[
            ("g", "sum", "gross_sales"),
            ("d", "sum", "discounts"),
            ORDERS,
            NET,
            ("r", "sum", "returns"),
        ],
    )[0]
    # The oracle rounds each part; recompute unrounded to compare the quotient exactly.
    assert abs(got["aov"] - (parts["g"] + parts["d"]) / parts["orders"]) < Decimal("0.011")
    assert got["aov"] == got["average_order_value"]
    assert got["before_returns"] == parts["net_sales"] - parts["r"]


def test_timeseries_fills_gaps_with_zero_and_null(con: duckdb.DuckDBPyConnection) -> None:
    got = run(
        con,
        "FROM sales SHOW total_sales, orders, median(total_sales) TIMESERIES day "
        "SINCE 2024-04-10 UNTIL 2024-04-20",
    )
    want = expected(
        DF,
        gte=local(2024, 4, 10),
        lt=local(2024, 4, 21),
        time="day",
        metrics=[TS, ORDERS, ("median_total_sales", "median", "total_sales")],
    )
    want = filled(
        want,
        "day",
        days(date(2024, 4, 10), date(2024, 4, 20)),
        {"total_sales": Decimal("0.00"), "orders": 0, "median_total_sales": None},
    )
    assert canon(got["rows"]) == canon(want)
    assert [r["day"] for r in got["rows"]] == days(date(2024, 4, 10), date(2024, 4, 20))


def test_timeseries_empty_window_is_all_zero(con: duckdb.DuckDBPyConnection) -> None:
    got = run(con, "FROM sales SHOW total_sales TIMESERIES week DURING 2024-01-10")
    assert got["rows"] == [{"week": "2024-01-08", "total_sales": Decimal("0.00")}]


def test_top_n_with_other_and_real_totals(con: duckdb.DuckDBPyConnection) -> None:
    got = run(
        con,
        f"FROM sales SHOW total_sales, count_distinct(customer_id), "
        f"median(total_sales) GROUP BY TOP 3 product_title {M} WITH TOTALS",
    )
    metrics = [
        TS,
        ("count_distinct_customer_id", "count_distinct", "customer_id"),
        ("median_total_sales", "median", "total_sales"),
    ]
    per_product = expected(DF, **MARCH, metrics=metrics, group=["product_title"])
    top = sorted(per_product, key=lambda r: -r["total_sales"])[:3]
    names = [r["product_title"] for r in top]
    others = expected(
        DF, **MARCH, metrics=metrics, where=lambda r: r["product_title"] not in names
    )[0]
    assert got["rows"][:3] == top
    assert got["rows"][3] == {"product_title": "Other", **others}
    # Totals are computed, not summed: distinct customers and the median over all rows.
    assert got["totals"] == expected(DF, **MARCH, metrics=metrics)[0]
    assert got["totals"]["count_distinct_customer_id"] < sum(
        r["count_distinct_customer_id"] for r in got["rows"]
    )


def test_only_top(con: duckdb.DuckDBPyConnection) -> None:
    got = run(con, f"FROM sales SHOW orders GROUP BY ONLY TOP 2 sales_channel {M}")
    per = expected(DF, **MARCH, metrics=[ORDERS], group=["sales_channel"])
    assert got["rows"] == sorted(per, key=lambda r: -r["orders"])[:2]


def _top_within(
    metrics: list[tuple[str, str, str]], outer: str, inner: str, n: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The oracle of GROUP BY outer, TOP n inner (no OVERALL): each outer value's n inner
    values with the largest first metric (ties by name), then that value's Other row."""
    per = expected(DF, **MARCH, metrics=metrics, group=[outer, inner])
    first = metrics[0][0]
    chosen: list[dict[str, Any]] = []
    others: list[dict[str, Any]] = []
    for value in {r[outer] for r in per}:
        mine = [r for r in per if r[outer] == value]
        mine.sort(key=lambda r: (-r[first], str(r[inner])))
        top = mine[:n]
        chosen += top
        names = {r[inner] for r in top}
        rest = expected(
            DF,
            **MARCH,
            metrics=metrics,
            where=lambda r, v=value, names=names: r[outer] == v and r[inner] not in names,
        )[0]
        if len(mine) > n:
            others.append({outer: value, inner: "Other", **rest})
    return chosen, others


def test_top_within_each_preceding_dimension(con: duckdb.DuckDBPyConnection) -> None:
    metrics = [TS, ("count_distinct_customer_id", "count_distinct", "customer_id")]
    got = run(
        con,
        f"FROM sales SHOW total_sales, count_distinct(customer_id) "
        f"GROUP BY store, TOP 2 product_title {M}",
    )
    chosen, others = _top_within(metrics, "store", "product_title", 2)
    rows = got["rows"]
    assert canon([r for r in rows if r["product_title"] != "Other"]) == canon(chosen)
    # Each store's Other is computed over that store's other products (a distinct count
    # of Other is real), and the Other rows come last.
    assert canon([r for r in rows if r["product_title"] == "Other"]) == canon(others)
    assert all(r["product_title"] == "Other" for r in rows[len(chosen) :])
    # Not the ranking over every store at once: some store's top differs from OVERALL's.
    overall = run(
        con, f"FROM sales SHOW total_sales GROUP BY store, TOP 2 product_title OVERALL {M}"
    )
    assert {(r["store"], r["product_title"]) for r in overall["rows"]} != {
        (r["store"], r["product_title"]) for r in rows
    }


def test_only_top_within_each_preceding_dimension(con: duckdb.DuckDBPyConnection) -> None:
    got = run(con, f"FROM sales SHOW orders GROUP BY sales_channel, ONLY TOP 1 store {M}")
    chosen, _ = _top_within([ORDERS], "sales_channel", "store", 1)
    assert canon(got["rows"]) == canon(chosen)


def test_group_totals_beside_top(con: duckdb.DuckDBPyConnection) -> None:
    got = run(
        con,
        f"FROM sales SHOW total_sales, count_distinct(customer_id) "
        f"GROUP BY store, TOP 2 product_title {M} WITH GROUP_TOTALS",
    )
    distinct = ("count_distinct_customer_id", "count_distinct", "customer_id")
    metrics = [TS, distinct]
    per_store = {r["store"]: r for r in expected(DF, **MARCH, metrics=metrics, group=["store"])}
    for row in got["rows"]:
        # The store's total over all its rows, those folded into Other included.
        assert row["total_sales__store_totals"] == per_store[row["store"]]["total_sales"]
        assert (
            row["count_distinct_customer_id__store_totals"]
            == per_store[row["store"]]["count_distinct_customer_id"]
        )


def test_group_totals_of_a_level_holding_top(con: duckdb.DuckDBPyConnection) -> None:
    got = run(
        con,
        f"FROM sales SHOW total_sales GROUP BY store, TOP 2 product_title, sales_channel {M} "
        "WITH GROUP_TOTALS",
    )
    chosen, others = _top_within([TS], "store", "product_title", 2)
    want = {(r["store"], r["product_title"]): r["total_sales"] for r in chosen + others}
    assert got["rows"]
    for row in got["rows"]:
        # A chosen product's total within its store, or the store's Other total.
        key = (row["store"], row["product_title"])
        assert row["total_sales__product_title_totals"] == want[key], row


def test_mixed_currency_totals_in_jpy(con: duckdb.DuckDBPyConnection) -> None:
    got = run(con, f"FROM sales SHOW total_sales GROUP BY store {M} WITH TOTALS, CURRENCY 'JPY'")
    assert got["currency"] == "JPY"
    assert got["totals"] == expected(DF, **MARCH, metrics=[TS], currency="JPY")[0]
    assert all(r["total_sales"] == r["total_sales"].to_integral_value() for r in got["rows"])


def test_having_order_limit(con: duckdb.DuckDBPyConnection) -> None:
    got = run(
        con,
        f"FROM sales SHOW total_sales, orders GROUP BY product_title "
        f"HAVING orders >= 10 AND total_sales > 100 ORDER BY orders DESC, "
        f"product_title LIMIT 3 {M}",
    )
    per = expected(DF, **MARCH, metrics=[TS, ORDERS], group=["product_title"])
    keep = [r for r in per if r["orders"] >= 10 and r["total_sales"] > 100]
    keep.sort(key=lambda r: (-r["orders"], r["product_title"] or "~"))
    assert got["rows"] == keep[:3]
    assert "truncated" not in got


def test_store_ids_intersect_where_store(con: duckdb.DuckDBPyConnection) -> None:
    got = run(
        con,
        f"FROM sales SHOW total_sales WHERE store IN ('Main Street', 'Tokyo Corner') {M}",
        store_ids=["st_main", "st_berlin"],
    )
    assert got["rows"] == expected(DF, **MARCH, metrics=[TS], stores=["st_main"])


def test_hidden_store_rows_never_count(con: duckdb.DuckDBPyConnection) -> None:
    everything = expected(DF, **MARCH, metrics=[TS], stores=[*STORES, "st_hidden"])[0][
        "total_sales"
    ]
    got = run(con, f"FROM sales SHOW total_sales {M}")["rows"][0]["total_sales"]
    assert got == expected(DF, **MARCH, metrics=[TS])[0]["total_sales"] != everything


def _shift(rows: list[dict[str, Any]], old: list[str], new: list[str]) -> dict[str, Any]:
    index = dict(zip(old, new, strict=True))
    return {index[r["day"]]: r for r in rows if r["day"] in index}


def test_compare_previous_period_by_day(con: duckdb.DuckDBPyConnection) -> None:
    got = run(
        con,
        "FROM sales SHOW total_sales TIMESERIES day SINCE 2024-03-08 "
        "UNTIL 2024-03-14 COMPARE TO previous_period WITH PERCENT_CHANGE",
    )
    now_days = days(date(2024, 3, 8), date(2024, 3, 14))
    then_days = days(date(2024, 3, 1), date(2024, 3, 7))
    current = {
        r["day"]: r
        for r in expected(
            DF, gte=local(2024, 3, 8), lt=local(2024, 3, 15), metrics=[TS], time="day"
        )
    }
    before = _shift(
        expected(DF, gte=local(2024, 3, 1), lt=local(2024, 3, 8), metrics=[TS], time="day"),
        then_days,
        now_days,
    )
    for row in got["rows"]:
        cur = current.get(row["day"], {"total_sales": Decimal("0.00")})["total_sales"]
        old = before.get(row["day"], {"total_sales": Decimal("0.00")})["total_sales"]
        assert row["total_sales"] == cur
        assert row["comparison_total_sales__previous_period"] == old
        pct = row["percent_change_total_sales__previous_period"]
        assert (
            pct is None if old == 0 else abs(pct - (cur - old) / abs(old) * 100) < Decimal("0.02")
        )


@pytest.mark.parametrize(
    ("compare", "gte", "lt"),
    [
        ("previous_year", local(2023, 3, 1), local(2023, 4, 1)),
        ("previous_year_match_day_of_week", local(2023, 3, 3), local(2023, 4, 3)),
        ("2023-03-05 UNTIL 2023-03-20", local(2023, 3, 5), local(2023, 3, 21)),
    ],
)
def test_compare_by_store(
    con: duckdb.DuckDBPyConnection, compare: str, gte: datetime, lt: datetime
) -> None:
    got = run(
        con, f"FROM sales SHOW total_sales GROUP BY store {M} COMPARE TO {compare} WITH TOTALS"
    )
    name = next(c["name"] for c in got["columns"] if c["name"].startswith("comparison_"))
    then = {
        r["store"]: r["total_sales"]
        for r in expected(DF, gte=gte, lt=lt, metrics=[TS], group=["store"])
    }
    for row in got["rows"]:
        assert row[name] == then.get(row["store"], Decimal("0.00"))
    assert got["totals"][name] == expected(DF, gte=gte, lt=lt, metrics=[TS])[0]["total_sales"]


@pytest.mark.parametrize("currency", ["EUR", "JPY"])
def test_conversion_over_the_whole_calendar(con: duckdb.DuckDBPyConnection, currency: str) -> None:
    # Factors are looked up for the days with events, not for every day of 9,997 years.
    got = run(
        con,
        f"FROM sales SHOW total_sales, net_sales SINCE 0002-01-01 UNTIL 9998-12-31 "
        f"WITH CURRENCY '{currency}', TOTALS",
        time_zone="UTC",
    )
    want = expected(
        DF,
        gte=datetime(2, 1, 1, tzinfo=UTC),
        lt=datetime(9999, 1, 1, tzinfo=UTC),
        metrics=[TS, NET],
        currency=currency,
    )
    assert canon(got["rows"]) == canon(want)
    assert canon([got["totals"]]) == canon(want)


def test_hour_comparison_with_a_window_of_millennia(con: duckdb.DuckDBPyConnection) -> None:
    """Comparison hours meet current hours by position from the start of each window, also
    when the comparison window runs to the end of the calendar."""
    got = run(
        con,
        "FROM sales SHOW total_sales TIMESERIES hour DURING 2024-03-10 "
        "COMPARE TO 2024-03-09 UNTIL 9998-12-31 WITH CURRENCY 'EUR'",
        time_zone="UTC",
    )
    zone = ZoneInfo("UTC")
    start = datetime(2024, 3, 9, tzinfo=UTC)
    then_hours = [bucket_of(start + timedelta(hours=k), "hour", zone) for k in range(24)]
    before = {
        r["hour"]: r["total_sales"]
        for r in expected(
            DF,
            gte=start,
            lt=start + timedelta(days=1),
            metrics=[TS],
            time="hour",
            zone=zone,
            currency="EUR",
        )
    }
    assert len(got["rows"]) == 24
    name = "comparison_total_sales__20240309_until_99981231"
    compared = [row[name] for row in got["rows"]]
    assert compared == [before.get(h, Decimal("0.00")) for h in then_hours]
    assert any(compared)  # the oracle's hours are not all empty


def test_hour_buckets_carry_offsets(con: duckdb.DuckDBPyConnection) -> None:
    got = run(con, "FROM sales SHOW orders TIMESERIES hour DURING 2024-11-03")
    hours = [r["hour"] for r in got["rows"]]
    assert len(hours) == 25 and hours[1:3] == [
        "2024-11-03T01:00:00-04:00",
        "2024-11-03T01:00:00-05:00",
    ]
    at = datetime(2024, 11, 3, 6, 30, tzinfo=UTC)
    assert bucket_of(at, "hour", NY) == "2024-11-03T01:00:00-05:00"


def test_default_limit_marks_truncation(con: duckdb.DuckDBPyConnection) -> None:
    # Patched where check_limit reads it.
    from warehouse.query.checker import having

    old = having.DEFAULT_LIMIT
    having.DEFAULT_LIMIT = 5
    try:
        got = run(con, f"FROM sales SHOW total_sales GROUP BY order_id {M}")
    finally:
        having.DEFAULT_LIMIT = old
    assert len(got["rows"]) == 5 and got["truncated"] is True


def test_too_large_is_refused_before_running(con: duckdb.DuckDBPyConnection) -> None:
    from quarry.errors import InvalidQuery
    from warehouse.query import Limits

    with pytest.raises(InvalidQuery) as exc:
        run_query(
            con,
            "FROM sales SHOW total_sales GROUP BY order_id, customer_id TIMESERIES "
            "hour SINCE 2024-01-01 UNTIL 2024-04-15",
            stores=STORES,
            account_currency="USD",
            account_timezone=ACCOUNT_ZONE,
            now=NOW,
            limits=Limits(max_groups=10_000),
        )
    assert exc.value.errors[0]["message"].startswith("The result would have about")


def test_timeout_interrupts(con: duckdb.DuckDBPyConnection) -> None:
    from quarry.errors import QueryTimedOut
    from warehouse.query import Limits

    slow = duckdb.connect()
    slow.execute("CREATE TABLE sales AS SELECT * FROM (SELECT 1) WHERE FALSE")  # replaced below
    slow.execute("DROP TABLE sales")
    slow.execute(
        "CREATE VIEW sales AS SELECT 'e' || i AS id, 'st_main' AS store_id, 'o' || i AS "
        "order_id, 'order' AS event_type, TIMESTAMPTZ '2024-03-05 12:00:00+00' AS happened_at, "
        "TIMESTAMP '2024-03-05 07:00:00' AS happened_at_account, TIMESTAMP '2024-03-05 07:00:00'"
        " AS happened_at_store, 'USD' AS currency, 'c' || (i % 1000003) AS customer_id, "
        "1.00::DECIMAL(18,2) AS total_sales FROM range(300000000) t(i)"
    )
    with pytest.raises(QueryTimedOut):
        run_query(
            slow,
            f"FROM sales SHOW customers {M}",
            stores={"st_main": STORES["st_main"]},
            account_currency="USD",
            account_timezone=ACCOUNT_ZONE,
            now=NOW,
            limits=Limits(timeout_seconds=0.3),
        )


def test_suite_size() -> None:
    assert len(CASES) + 13 >= 40
