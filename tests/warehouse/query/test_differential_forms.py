"""Differential suite for the forms and metrics issue 19 added: each result against the
pandas oracle of tests/warehouse/query/data.py on the same hand-made rows, across DST
changes (New York 2024-03-10, Berlin 2024-03-31) and currencies (USD, EUR, JPY stores
converted at each row's daily rate)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

import duckdb
import pandas as pd
import pytest

from tests.warehouse.query.data import (
    ACCOUNT_CURRENCY,
    ACCOUNT_ZONE,
    BERLIN,
    NOW,
    NY,
    RATES,
    STORES,
    _round,
    _zone,
    bucket_of,
    connect,
    frame,
    local,
    run_public,
)
from warehouse.query import Limits, run_query

DF = frame()
MARCH = (local(2024, 3, 1), local(2024, 4, 1))
M = "SINCE 2024-03-01 UNTIL 2024-03-31"


run = run_public


# ---- the oracle's pieces ----


def rows_in(gte: datetime, lt: datetime, where: Callable[[dict[str, Any]], bool] | None = None):
    sel = DF[DF["store_id"].isin(list(STORES))]
    sel = sel[(sel["happened_at"] >= gte) & (sel["happened_at"] < lt)]
    records = sel.to_dict("records")
    return [r for r in records if where is None or where(r)]


def money(r: dict[str, Any], field: str, currency: str) -> Decimal | None:
    """The row's amount converted at its day's rate in its store's zone."""
    if r[field] is None:
        return None
    day = r["happened_at"].astimezone(_zone(r["store_id"])).date()
    return RATES.convert(Decimal(r[field]), r["currency"], currency, day)


def total(records: Iterable[dict[str, Any]], field: str, currency: str = "USD") -> Any:
    values = [money(r, field, currency) for r in records]
    return _round(sum((v for v in values if v is not None), Decimal(0)), "money", currency)


def customers(records: Iterable[dict[str, Any]]) -> int:
    """Shopify's definition: customers who placed an order (a return alone does not count)."""
    return len(
        {r["customer_id"] for r in records if r["event_type"] == "order" and r["customer_id"]}
    )


def by(records: list[dict[str, Any]], key: Callable[[dict[str, Any]], Any]) -> dict[Any, list]:
    out: dict[Any, list] = defaultdict(list)
    for r in records:
        out[key(r)].append(r)
    return out


def first_orders() -> set[tuple[str, str, str]]:
    """(store, customer, order) of each customer's first order in each store, over every
    synced event (not only the window's)."""
    firsts: dict[tuple[str, str], tuple[datetime, str]] = {}
    for r in DF.to_dict("records"):
        if r["event_type"] != "order" or r["customer_id"] is None:
            continue
        key = (r["store_id"], r["customer_id"])
        here = (r["happened_at"], r["order_id"])
        if key not in firsts or here < firsts[key]:
            firsts[key] = here
    return {(s, c, o) for (s, c), (_, o) in firsts.items()}


def customer_type(r: dict[str, Any], firsts: set[tuple[str, str, str]]) -> str | None:
    if r["customer_id"] is None:
        return None
    first = (r["store_id"], r["customer_id"], r["order_id"]) in firsts
    return "First-time" if first else "Returning"


def as_map(rows: list[dict[str, Any]], *keys: str) -> dict[Any, dict[str, Any]]:
    return {tuple(r[k] for k in keys) if len(keys) > 1 else r[keys[0]]: r for r in rows}


# ---- metrics ----


def test_customers_are_those_who_placed_an_order(con: duckdb.DuckDBPyConnection) -> None:
    body = run(con, f"FROM sales SHOW customers, total_sales GROUP BY store {M} WITH TOTALS")
    records = rows_in(*MARCH)
    stores = by(records, lambda r: STORES[r["store_id"]].name)
    got = as_map(body["rows"], "store")
    assert set(got) == set(stores)
    for name, part in stores.items():
        assert got[name]["customers"] == customers(part), name
        assert got[name]["total_sales"] == total(part, "total_sales"), name
    # The total is the real distinct count over the window (computed with the groups).
    assert body["totals"] == {
        "customers": customers(records),
        "total_sales": total(records, "total_sales"),
    }


def test_customers_per_day_leave_out_those_who_only_returned(
    con: duckdb.DuckDBPyConnection,
) -> None:
    body = run(con, f"FROM sales SHOW customers TIMESERIES day GROUP BY store {M}")
    days = by(
        rows_in(*MARCH),
        lambda r: (bucket_of(r["happened_at"], "day", NY), STORES[r["store_id"]].name),
    )
    differs = 0
    for row in body["rows"]:
        part = days.get((row["day"], row["store"]), [])
        assert row["customers"] == customers(part), row
        # The old definition (any event) counts a customer whose day held only a return.
        differs += customers(part) != len({r["customer_id"] for r in part if r["customer_id"]})
    assert differs > 0


@pytest.mark.parametrize("currency", ["USD", "EUR", "JPY"])
def test_customer_type_splits_first_and_returning_orders(
    con: duckdb.DuckDBPyConnection, currency: str
) -> None:
    body = run(
        con,
        f"FROM sales SHOW total_sales, orders GROUP BY customer_type {M} "
        f"WITH CURRENCY '{currency}'",
    )
    firsts = first_orders()
    groups = by(rows_in(*MARCH), lambda r: customer_type(r, firsts))
    got = as_map(body["rows"], "customer_type")
    assert set(got) == set(groups) == {"First-time", "Returning", None}
    for kind, part in groups.items():
        assert got[kind]["total_sales"] == total(part, "total_sales", currency), kind
        orders = len({r["order_id"] for r in part if r["event_type"] == "order"})
        assert got[kind]["orders"] == orders, kind


@pytest.mark.parametrize("currency", ["USD", "EUR"])
def test_cost_and_profit(con: duckdb.DuckDBPyConnection, currency: str) -> None:
    body = run(
        con,
        "FROM sales SHOW cost_of_goods_sold, net_sales_with_cost_recorded, gross_profit, "
        f"gross_margin GROUP BY store {M} WITH CURRENCY '{currency}', TOTALS",
    )
    records = rows_in(*MARCH)

    def expected(part: list[dict[str, Any]]) -> dict[str, Any]:
        costed = [r for r in part if r["cost_is_recorded"]]
        net = sum((money(r, "net_sales", currency) for r in costed), Decimal(0))
        cost = sum((money(r, "cost_of_goods_sold", currency) for r in costed), Decimal(0))
        profit = net - cost
        return {
            "cost_of_goods_sold": _round(cost, "money", currency),
            "net_sales_with_cost_recorded": _round(net, "money", currency),
            "gross_profit": _round(profit, "money", currency),
            "gross_margin": _round(profit / net * 100, "number", currency) if net else None,
        }

    for name, part in by(records, lambda r: STORES[r["store_id"]].name).items():
        row = as_map(body["rows"], "store")[name]
        assert {k: row[k] for k in expected(part)} == expected(part), name
    assert body["totals"] == expected(records)


def test_sales_reversals_and_their_old_names(con: duckdb.DuckDBPyConnection) -> None:
    body = run(
        con,
        "FROM sales SHOW sales_reversals, returns, shipping_reversals, tax_reversals, "
        f"total_sales_reversals, total_returns, reversed_quantity {M}",
    )
    returns = [r for r in rows_in(*MARCH) if r["event_type"] == "return"]
    (row,) = body["rows"]
    assert row["sales_reversals"] == row["returns"] == total(rows_in(*MARCH), "returns")
    assert row["shipping_reversals"] == total(returns, "shipping_charges")
    assert row["tax_reversals"] == total(returns, "taxes")
    assert row["total_sales_reversals"] == row["total_returns"] == total(returns, "total_sales")
    assert row["reversed_quantity"] == sum(r["returned_item_quantity"] for r in returns)


def test_shipping_geography_discount_codes_and_cancellation(
    con: duckdb.DuckDBPyConnection,
) -> None:
    body = run(
        con,
        "FROM sales SHOW total_sales GROUP BY shipping_country, discount_code, "
        f"order_cancelled {M} LIMIT 1000",
    )
    groups = by(
        rows_in(*MARCH),
        lambda r: (r["shipping_country"], r["discount_code"], r["order_cancelled"]),
    )
    got = as_map(body["rows"], "shipping_country", "discount_code", "order_cancelled")
    assert set(got) == set(groups)
    for key, part in groups.items():
        assert got[key]["total_sales"] == total(part, "total_sales"), key


# ---- clauses ----


def test_group_totals_are_each_outer_group_in_one_pass(con: duckdb.DuckDBPyConnection) -> None:
    body = run(
        con,
        "FROM sales SHOW total_sales, customers GROUP BY store, sales_channel "
        f"{M} WITH GROUP_TOTALS, TOTALS, CURRENCY 'EUR'",
    )
    records = rows_in(*MARCH)
    stores = by(records, lambda r: STORES[r["store_id"]].name)
    pairs = by(records, lambda r: (STORES[r["store_id"]].name, r["sales_channel"]))
    assert len(body["rows"]) == len(pairs)
    for row in body["rows"]:
        part = pairs[(row["store"], row["sales_channel"])]
        outer = stores[row["store"]]
        assert row["total_sales"] == total(part, "total_sales", "EUR")
        assert row["total_sales__store_totals"] == total(outer, "total_sales", "EUR")
        # A distinct count's group total is the real figure, not the sum of its rows.
        assert row["customers__store_totals"] == customers(outer)
    assert body["totals"] == {
        "total_sales": total(records, "total_sales", "EUR"),
        "customers": customers(records),
    }


def test_group_totals_per_time_bucket(con: duckdb.DuckDBPyConnection) -> None:
    body = run(
        con,
        "FROM sales SHOW total_sales TIMESERIES week GROUP BY store, product_type "
        f"{M} WITH GROUP_TOTALS",
    )
    records = rows_in(*MARCH)
    week_store = by(
        records, lambda r: (bucket_of(r["happened_at"], "week", NY), STORES[r["store_id"]].name)
    )
    for row in body["rows"]:
        part = week_store.get((row["week"], row["store"]), [])
        assert row["total_sales__store_totals"] == total(part, "total_sales"), row


@pytest.mark.parametrize(("zone", "name"), [(NY, "America/New_York"), (BERLIN, "Europe/Berlin")])
def test_cumulative_values_run_along_time_across_dst(
    con: duckdb.DuckDBPyConnection, zone: ZoneInfo, name: str
) -> None:
    body = run(
        con,
        "FROM sales SHOW total_sales, orders, average_order_value TIMESERIES day GROUP BY store "
        f"{M} WITH CUMULATIVE_VALUES, TIMEZONE '{name}'",
    )
    gte, lt = local(2024, 3, 1, zone), local(2024, 4, 1, zone)
    records = rows_in(gte, lt)
    days = [(date(2024, 3, 1) + timedelta(days=k)).isoformat() for k in range(31)]
    assert "average_order_value__cumulative" not in body["rows"][0]  # not additive
    for store in STORES.values():
        running, orders = Decimal(0), 0
        mine = [r for r in body["rows"] if r["store"] == store.name]
        assert [r["day"] for r in mine] == days
        for row in mine:
            part = [
                r
                for r in records
                if STORES[r["store_id"]].name == store.name
                and bucket_of(r["happened_at"], "day", zone) == row["day"]
            ]
            running += sum((money(r, "total_sales", "USD") for r in part), Decimal(0))
            orders += len({r["order_id"] for r in part if r["event_type"] == "order"})
            assert row["total_sales__cumulative"] == _round(running, "money", "USD"), row
            assert row["orders__cumulative"] == orders, row


@pytest.mark.parametrize(
    ("keyword", "gte", "lt"),
    [
        ("previous_month", local(2024, 2, 1), local(2024, 3, 1)),
        ("previous_quarter", local(2023, 12, 1), local(2024, 1, 1)),
        ("previous_week", local(2024, 2, 23), local(2024, 3, 25)),
        ("previous_day", local(2024, 2, 29), local(2024, 3, 31)),
        (
            "previous_hour",
            local(2024, 3, 1) - timedelta(hours=1),
            local(2024, 4, 1) - timedelta(hours=1),
        ),
    ],
)
def test_previous_unit_comparisons(
    con: duckdb.DuckDBPyConnection, keyword: str, gte: datetime, lt: datetime
) -> None:
    body = run(
        con,
        f"FROM sales SHOW total_sales, customers {M} COMPARE TO {keyword} WITH PERCENT_CHANGE",
    )
    (row,) = body["rows"]
    before = rows_in(gte, lt)
    assert row[f"comparison_total_sales__{keyword}"] == total(before, "total_sales")
    assert row[f"comparison_customers__{keyword}"] == customers(before)
    now, then = Decimal(row["total_sales"]), Decimal(row[f"comparison_total_sales__{keyword}"])
    expected = None if then == 0 else _round((now - then) * 100 / abs(then), "number", "USD")
    assert row[f"percent_change_total_sales__{keyword}"] == expected


def test_minute_buckets_and_minute_offsets(con: duckdb.DuckDBPyConnection) -> None:
    """Around New York's spring-forward night, minute by minute; a minute offset backs
    off from the current instant."""
    gte = datetime(2024, 3, 10, 4, 30, tzinfo=UTC)
    lt = datetime(2024, 3, 10, 7, 30, tzinfo=UTC)
    body = run(
        con,
        "FROM sales SHOW total_sales GROUP BY minute "
        "SINCE 2024-03-10T04:30:00Z UNTIL 2024-03-10T07:30:00Z",
    )
    expected: dict[str, Any] = {}
    for minute, part in by(
        rows_in(gte, lt),
        lambda r: r["happened_at"].astimezone(NY).replace(second=0, microsecond=0).isoformat(),
    ).items():
        expected[minute] = total(part, "total_sales")
    assert {r["minute"]: r["total_sales"] for r in body["rows"]} == expected
    assert expected  # the edges of the data sit in this span
    window = run(con, "FROM sales SHOW total_sales SINCE -90min UNTIL now")["window"]
    assert window["gte"] == (NOW - timedelta(minutes=90)).isoformat().replace("+00:00", "Z")


def test_week_of_year_and_a_second_time_dimension(con: duckdb.DuckDBPyConnection) -> None:
    body = run(con, f"FROM sales SHOW total_sales GROUP BY day, hour_of_day {M} LIMIT 5000")
    groups = by(
        rows_in(*MARCH),
        lambda r: (bucket_of(r["happened_at"], "day", NY), r["happened_at"].astimezone(NY).hour),
    )
    got = {(r["day"], r["hour_of_day"]): r["total_sales"] for r in body["rows"]}
    assert got == {k: total(part, "total_sales") for k, part in groups.items()}
    # 2024-03-10 has no 02:00 in New York.
    assert not any(day == "2024-03-10" and hour == 2 for day, hour in got)

    weeks = run(con, f"FROM sales SHOW total_sales TIMESERIES week_of_year {M}")
    by_week = by(rows_in(*MARCH), lambda r: r["happened_at"].astimezone(NY).isocalendar().week)
    assert [r["week_of_year"] for r in weeks["rows"]] == list(range(1, 54))
    for row in weeks["rows"]:
        assert row["total_sales"] == total(by_week.get(row["week_of_year"], []), "total_sales")


def test_group_by_store_on_a_record_dataset(con: duckdb.DuckDBPyConnection) -> None:
    body = run(
        con,
        "FROM orders SHOW count(order_count), total_price GROUP BY store "
        "SINCE 2024-03-01 UNTIL 2024-04-30 WITH TOTALS, CURRENCY 'EUR'",
    )
    orders = pd.DataFrame(connect().sql("SELECT * FROM orders").fetchdf())
    assert {r["store"] for r in body["rows"]} == {s.name for s in STORES.values()}
    assert sum(r["count_order_count"] for r in body["rows"]) == len(orders)
    assert body["totals"]["count_order_count"] == len(orders)


def test_limit_above_ten_thousand(con: duckdb.DuckDBPyConnection) -> None:
    body = run(con, "FROM sales SHOW total_sales GROUP BY order_id SINCE -2y LIMIT 20000")
    expected = len({r["order_id"] for r in rows_in(local(2022, 4, 1), local(2024, 4, 16))})
    assert len(body["rows"]) == expected


class _Counting:
    """A DuckDB connection that counts the statements run on it."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con
        self.statements: list[str] = []

    def execute(self, sql: str, params: Any = None) -> duckdb.DuckDBPyConnection:
        self.statements.append(sql)
        return self.con.execute(sql, params)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.con, name)


@pytest.mark.parametrize(
    "text",
    [
        f"FROM sales SHOW total_sales, net_sales, orders GROUP BY store {M} WITH TOTALS",
        f"FROM sales SHOW total_sales GROUP BY store, sales_channel {M} WITH TOTALS, GROUP_TOTALS",
        f"FROM sales SHOW total_sales TIMESERIES day {M} WITH TOTALS",
    ],
)
def test_totals_are_read_in_the_groups_pass(con: duckdb.DuckDBPyConnection, text: str) -> None:
    """Breakdown with totals (issue 14's benchmark target): one aggregate over the events
    (GROUPING SETS), not a second query for the totals."""
    counting = _Counting(con)
    result = run_query(
        counting,  # type: ignore[arg-type]
        text,
        stores=STORES,
        account_currency=ACCOUNT_CURRENCY,
        account_timezone=ACCOUNT_ZONE,
        now=NOW,
        store_ids=["st_main"],  # USD only: no exchange-rate reads
        # The facts' pass: these hand-made tables have no rollups (tests/warehouse/rollups).
        limits=Limits(rollups=False),
    ).public()
    # Beside the cursor-variable read that finds the reader's kept tables (none here).
    reads = [s for s in counting.statements if "getvariable" not in s]
    assert len(reads) == 1, counting.statements
    assert "GROUPING SETS" in reads[0]
    records = [r for r in rows_in(*MARCH) if r["store_id"] == "st_main"]
    assert result["totals"]["total_sales"] == total(records, "total_sales")


def test_orders_answers_to_shopifyql_orders_dataset_names(
    con: duckdb.DuckDBPyConnection,
) -> None:
    """ShopifyQL's orders dataset names (ordered_product_quantity, discounts, duties,
    additional_fees) read the order record's own figures."""
    window = "SINCE 2024-03-01 UNTIL 2024-04-30"
    body = run(
        con,
        "FROM orders SHOW ordered_product_quantity, discounts, duties, additional_fees "
        f"GROUP BY store {window}",
    )
    orders = pd.DataFrame(connect().sql("SELECT * FROM orders").fetchdf())
    units = orders.groupby("store_id")["item_quantity"].sum()
    want = {STORES[s].name: int(n) for s, n in units.items()}
    assert {r["store"]: r["ordered_product_quantity"] for r in body["rows"]} == want
    quarry = run(
        con,
        "FROM orders SHOW item_quantity, total_discounts, total_duties, "
        f"total_additional_fees GROUP BY store {window}",
    )
    assert [list(r.values()) for r in body["rows"]] == [list(r.values()) for r in quarry["rows"]]
