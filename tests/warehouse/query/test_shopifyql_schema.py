"""ShopifyQL's field names real clients send (issue 31), against the pandas oracle of
tests/warehouse/query/data.py: each figure computed from the raw rows."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal
from typing import Any

import duckdb
import pytest

from tests.warehouse.query.data import STORES
from tests.warehouse.query.test_differential_forms import (
    MARCH,
    M,
    as_map,
    by,
    customer_type,
    customers,
    first_orders,
    rows_in,
    run,
    total,
)


def returning(records: list[dict[str, Any]], firsts: set[tuple[str, str, str]]) -> int:
    """Customers with an order in the records that was not their first in its store."""
    return len(
        {
            r["customer_id"]
            for r in records
            if r["event_type"] == "order" and customer_type(r, firsts) == "Returning"
        }
    )


def rate(records: list[dict[str, Any]], firsts: set[tuple[str, str, str]]) -> Any:
    every = customers(records)
    if not every:
        return None
    value = (Decimal(returning(records, firsts)) / Decimal(every)).quantize(
        Decimal("0.0001"), ROUND_HALF_UP
    )
    return int(value) if value == value.to_integral_value() else value


def test_quantity_names_are_the_quantities(con: duckdb.DuckDBPyConnection) -> None:
    body = run(
        con,
        f"FROM sales SHOW quantity_ordered, net_quantity, reversed_quantity GROUP BY store {M}",
    )
    assert [c["name"] for c in body["columns"]] == [
        "store",
        "quantity_ordered",
        "net_quantity",
        "reversed_quantity",
    ]
    stores = by(rows_in(*MARCH), lambda r: STORES[r["store_id"]].name)
    got = as_map(body["rows"], "store")
    assert set(got) == set(stores)
    for name, part in stores.items():
        assert got[name]["quantity_ordered"] == sum(r["ordered_item_quantity"] for r in part)
        assert got[name]["net_quantity"] == sum(r["net_items_sold"] for r in part)
        assert got[name]["reversed_quantity"] == sum(r["returned_item_quantity"] for r in part)


def test_is_canceled_order_filters_cancelled_orders(con: duckdb.DuckDBPyConnection) -> None:
    body = run(
        con,
        f"FROM sales SHOW total_sales, orders WHERE is_canceled_order = false {M} WITH TOTALS",
    )
    kept = rows_in(*MARCH, where=lambda r: not r["order_cancelled"])
    assert body["totals"]["total_sales"] == total(kept, "total_sales")
    assert body["totals"]["orders"] == len(
        {r["order_id"] for r in kept if r["event_type"] == "order"}
    )
    grouped = run(con, f"FROM sales SHOW orders GROUP BY is_canceled_order {M}")
    assert {r["is_canceled_order"] for r in grouped["rows"]} == {True, False}


def test_new_or_returning_customer_splits_orders(con: duckdb.DuckDBPyConnection) -> None:
    body = run(
        con,
        "FROM sales SHOW customers, orders, total_sales GROUP BY new_or_returning_customer "
        f"{M} WITH TOTALS",
    )
    firsts = first_orders()
    names = {"First-time": "New", "Returning": "Returning", None: None}
    records = rows_in(*MARCH)
    groups = by(records, lambda r: names[customer_type(r, firsts)])
    got = as_map(body["rows"], "new_or_returning_customer")
    assert set(got) == set(groups) == {"New", "Returning", None}
    for kind, part in groups.items():
        assert got[kind]["customers"] == customers(part), kind
        assert got[kind]["total_sales"] == total(part, "total_sales"), kind
        orders = len({r["order_id"] for r in part if r["event_type"] == "order"})
        assert got[kind]["orders"] == orders, kind
    # A customer whose first and a later order both fall in March is New and Returning.
    assert got["New"]["customers"] + got["Returning"]["customers"] > customers(records)


def test_returning_customers_and_their_rate(con: duckdb.DuckDBPyConnection) -> None:
    body = run(
        con,
        "FROM sales SHOW customers, returning_customers, returning_customer_rate "
        f"GROUP BY store {M} WITH TOTALS",
    )
    assert [c["type"] for c in body["columns"]] == ["string", "number", "number", "number"]
    firsts = first_orders()
    records = rows_in(*MARCH)
    stores = by(records, lambda r: STORES[r["store_id"]].name)
    got = as_map(body["rows"], "store")
    assert set(got) == set(stores)
    for name, part in stores.items():
        assert got[name]["customers"] == customers(part), name
        assert got[name]["returning_customers"] == returning(part, firsts), name
        assert got[name]["returning_customer_rate"] == rate(part, firsts), name
    assert body["totals"] == {
        "customers": customers(records),
        "returning_customers": returning(records, firsts),
        "returning_customer_rate": rate(records, firsts),
    }
    assert 0 < body["totals"]["returning_customer_rate"] < 1


def test_returning_customer_rate_by_month(con: duckdb.DuckDBPyConnection) -> None:
    from tests.warehouse.query.data import NY, bucket_of, local

    body = run(
        con,
        "FROM sales SHOW returning_customers, customers, returning_customer_rate "
        "TIMESERIES month SINCE 2024-01-01 UNTIL 2024-03-31",
    )
    firsts = first_orders()
    months = by(
        rows_in(local(2024, 1, 1), local(2024, 4, 1)),
        lambda r: bucket_of(r["happened_at"], "month", NY),
    )
    assert [r["month"] for r in body["rows"]] == ["2024-01-01", "2024-02-01", "2024-03-01"]
    for row in body["rows"]:
        part = months.get(row["month"], [])
        assert row["returning_customers"] == returning(part, firsts), row
        assert row["returning_customer_rate"] == rate(part, firsts), row


# ---- FROM customers: ShopifyQL's customers schema ----


def first_purchases() -> list[dict[str, Any]]:
    """The oracle's customers schema: each customer record of a readable store with an
    order, with its first and last order's times (processed_at, else created_at)."""
    from tests.warehouse.query.data import customer_rows, order_rows

    times: dict[tuple[str, str], list[Any]] = {}
    for o in order_rows():
        at = o["processed_at"] or o["created_at"]
        times.setdefault((o["store_id"], o["customer_id"]), []).append(at)
    out = []
    for c in customer_rows():
        seen = times.get((c["store_id"], c["id"]))
        if c["store_id"] in STORES and seen:
            out.append({**c, "first": min(seen), "last": max(seen)})
    return out


def spent(records: list[dict[str, Any]], currency: str) -> Any:
    """Amounts converted at the rate of the first order's day in the store's zone."""
    from tests.warehouse.query.data import RATES, _round, _zone

    amount = sum(
        (
            RATES.convert(
                Decimal(r["total_spent"]),
                r["currency"],
                currency,
                r["first"].astimezone(_zone(r["store_id"])).date(),
            )
            for r in records
        ),
        Decimal(0),
    )
    return amount, _round(amount, "money", currency)


@pytest.mark.parametrize("currency", ["USD", "EUR"])
def test_customers_by_month_of_first_order(con: duckdb.DuckDBPyConnection, currency: str) -> None:
    from tests.warehouse.query.data import NY, _round, bucket_of, local

    body = run(
        con,
        "FROM customers SHOW new_customer_records, total_amount_spent, total_number_of_orders, "
        "total_amount_spent_per_order GROUP BY month SINCE 2024-01-01 UNTIL 2024-04-30 "
        f"WITH TOTALS, CURRENCY '{currency}'",
    )
    window = [r for r in first_purchases() if local(2024, 1, 1) <= r["first"] < local(2024, 5, 1)]
    months = by(window, lambda r: bucket_of(r["first"], "month", NY))
    got = as_map(body["rows"], "month")
    assert set(got) == set(months) and len(got) >= 1
    for month, part in [*months.items(), ("totals", window)]:
        row = body["totals"] if month == "totals" else got[month]
        exact, rounded = spent(part, currency)
        orders = sum(r["orders_count"] for r in part)
        assert row["new_customer_records"] == len(part), month
        assert row["total_amount_spent"] == rounded, month
        assert row["total_number_of_orders"] == orders, month
        assert row["total_amount_spent_per_order"] == _round(exact / orders, "money", currency)
    # Customers who never ordered are not rows of the schema.
    assert body["totals"]["new_customer_records"] < 3 * 9


def test_customers_filtered_by_their_number_of_orders(con: duckdb.DuckDBPyConnection) -> None:
    body = run(
        con,
        "FROM customers SHOW new_customer_records, total_amount_spent "
        "WHERE customer_number_of_orders > 3 AND customer_email IS NOT NULL "
        "GROUP BY store SINCE 2023-01-01 UNTIL 2024-12-31",
    )
    kept = [r for r in first_purchases() if r["orders_count"] > 3 and r["email"] is not None]
    stores = by(kept, lambda r: STORES[r["store_id"]].name)
    got = as_map(body["rows"], "store")
    assert set(got) == set(stores)
    for name, part in stores.items():
        assert got[name]["new_customer_records"] == len(part)
        assert got[name]["total_amount_spent"] == spent(part, "USD")[1]


def test_customers_first_and_last_order_dates(con: duckdb.DuckDBPyConnection) -> None:
    from warehouse.query.dates import iso_utc

    body = run(
        con,
        "FROM customers SHOW customer_id, first_order_date, last_order_date, "
        "total_number_of_orders GROUP BY customer_id, first_order_date, last_order_date, store "
        "SINCE 2023-01-01 UNTIL 2024-12-31 ORDER BY first_order_date ASC LIMIT 5",
    )
    expected = sorted(first_purchases(), key=lambda r: r["first"])[:5]
    assert [
        (r["customer_id"], r["first_order_date"], r["last_order_date"]) for r in body["rows"]
    ] == [(r["id"], iso_utc(r["first"]), iso_utc(r["last"])) for r in expected]


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("FROM customers SHOW new_customer_records GROUP BY rfm_group", "rfm_group is a field"),
        ("FROM customers SHOW days_since_last_order", "days_since_last_order is a field"),
        ("FROM customers SHOW sum(total_amount_spent_per_order)", "already an aggregate"),
        ("FROM customers SHOW new_customers", "Unknown field 'new_customers'"),
    ],
)
def test_customers_refusals(con: duckdb.DuckDBPyConnection, text: str, needle: str) -> None:
    from quarry.errors import InvalidQuery

    with pytest.raises(InvalidQuery) as caught:
        run(con, text)
    assert needle in str(caught.value.errors)


# ---- refusals real queries hit ----


def _diagnostics(con: duckdb.DuckDBPyConnection, text: str) -> list[dict[str, Any]]:
    from quarry.errors import InvalidQuery

    with pytest.raises(InvalidQuery) as caught:
        run(con, text)
    return caught.value.errors


@pytest.mark.parametrize("schema", ["sessions", "inventory", "payments", "campaign_sales"])
def test_a_schema_quarry_does_not_sync_says_so_at_its_name(
    con: duckdb.DuckDBPyConnection, schema: str
) -> None:
    errors = _diagnostics(con, f"FROM {schema}\n  SHOW sessions SINCE -30d")
    assert len(errors) == 1
    assert (errors[0]["line"], errors[0]["column"]) == (1, 6)
    assert errors[0]["message"].startswith(
        f"ShopifyQL has a '{schema}' schema, but Quarry does not sync that data"
    )


def test_an_unknown_dataset_is_still_unknown(con: duckdb.DuckDBPyConnection) -> None:
    errors = _diagnostics(con, "FROM salez SHOW total_sales")
    assert errors[0]["message"] == "Unknown dataset 'salez'. Did you mean 'sales'?"


def test_an_invalid_visualization_type_is_a_parse_error_at_its_token(
    con: duckdb.DuckDBPyConnection,
) -> None:
    text = "FROM sales SHOW total_sales GROUP BY store\nVISUALIZE total_sales TYPE bars"
    errors = _diagnostics(con, text)
    assert errors == [
        {
            "line": 2,
            "column": 28,
            "message": "Unknown visualization type 'bars'. Did you mean 'bar'?",
            "severity": "error",
        }
    ]


@pytest.mark.parametrize("chart", ["bar", "horizontal_bar", "line", "list_with_dimension_values"])
def test_the_visualization_types_in_use_run(con: duckdb.DuckDBPyConnection, chart: str) -> None:
    body = run(
        con, f"FROM sales SHOW total_sales GROUP BY store {M} VISUALIZE total_sales TYPE {chart}"
    )
    assert len(body["rows"]) == 3


def test_group_totals_with_compare_to(con: duckdb.DuckDBPyConnection) -> None:
    from tests.warehouse.query.data import local

    body = run(
        con,
        "FROM sales SHOW total_sales GROUP BY store, sales_channel "
        f"{M} COMPARE TO 2024-02-01 UNTIL 2024-02-29 WITH GROUP_TOTALS",
    )
    names = [c["name"] for c in body["columns"]]
    assert names == [
        "store",
        "sales_channel",
        "total_sales",
        "comparison_total_sales__20240201_until_20240229",
        "total_sales__store_totals",
    ]
    march = rows_in(*MARCH)
    february = rows_in(local(2024, 2, 1), local(2024, 3, 1))
    assert len(body["rows"]) > 3
    for row in body["rows"]:

        def mine(r: dict[str, Any], row: dict[str, Any] = row) -> bool:
            return STORES[r["store_id"]].name == row["store"]

        def cell(r: dict[str, Any], row: dict[str, Any] = row) -> bool:
            return mine(r) and r["sales_channel"] == row["sales_channel"]

        assert row["total_sales"] == total([r for r in march if cell(r)], "total_sales")
        assert row["comparison_total_sales__20240201_until_20240229"] == total(
            [r for r in february if cell(r)], "total_sales"
        )
        assert row["total_sales__store_totals"] == total(
            [r for r in march if mine(r)], "total_sales"
        )
