"""Sums of converted money over the factor's two halves (fields.split_sum_sql): the same
decimals, of the same type, as over the whole factor; an amount too large for the halves'
64-bit products is answered over the whole factor."""

from __future__ import annotations

import logging
import random
from datetime import date, timedelta
from decimal import Decimal

import duckdb
import pyarrow as pa
import pytest

from tests.warehouse.query.data import (
    ACCOUNT_ZONE,
    NOW,
    STORES,
    connect,
    expected,
    frame,
    local,
    run_public,
    sales_rows,
)
from warehouse.query import Limits, compile_query, rates
from warehouse.query.compiler import splits_sums
from warehouse.query.fields import split_sum_sql

WIDE = "SUM((t.amount * f.factor))"
FILTERED = WIDE + " FILTER (WHERE t.kind = 'return')"


def _table(rng: random.Random) -> duckdb.DuckDBPyConnection:
    """Amounts up to ten million in three currencies over ten days, some null, and their
    factors to EUR from random rates of 0.3 to 200 per USD (rates.factors_of, as the
    engine makes them)."""
    con = duckdb.connect()
    days = [date(2024, 1, 1) + timedelta(days=k) for k in range(10)]
    rows = [
        (
            currency,
            day,
            Decimal(rng.randint(3000, 2 * 10**6)) / 10**4,
            Decimal(rng.randint(3000, 2 * 10**6)) / 10**4,
        )
        for currency in ("USD", "JPY", "KWD")
        for day in days
    ]
    con.register("fx", rates.factors_of(rows, "EUR"))
    amounts = pa.table(
        {
            "currency": [rng.choice(["USD", "JPY", "KWD"]) for _ in range(2000)],
            "day": [rng.choice(days) for _ in range(2000)],
            "amount": [
                None if rng.random() < 0.05 else Decimal(rng.randint(-(10**9), 10**9)) / 100
                for _ in range(2000)
            ],
            "kind": [rng.choice(["order", "return"]) for _ in range(2000)],
        },
        schema=pa.schema(
            [
                ("currency", pa.string()),
                ("day", pa.date32()),
                ("amount", pa.decimal128(18, 2)),
                ("kind", pa.string()),
            ]
        ),
    )
    con.register("t_amounts", amounts)
    return con


def _sums(con: duckdb.DuckDBPyConnection, aggregates: list[str]) -> list[tuple[object, ...]]:
    columns = ", ".join(f"{a}, typeof({a})" for a in aggregates)
    return con.execute(
        f"SELECT t.currency, {columns} FROM t_amounts t "
        "LEFT JOIN fx f ON f.currency = t.currency AND f.date = t.day GROUP BY 1 ORDER BY 1"
    ).fetchall()


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_split_sums_are_the_whole_factors_sums(seed: int) -> None:
    con = _table(random.Random(seed))
    split = [split_sum_sql(WIDE), split_sum_sql(FILTERED)]
    assert split[0] != WIDE and "factor_high" in split[0] and "FILTER" in split[1]
    whole = _sums(con, [WIDE, FILTERED])
    assert _sums(con, split) == whole
    assert {row[2] for row in whole} == {"DECIMAL(38,14)"}


def test_the_halves_make_the_factor() -> None:
    day = date(2024, 1, 1)
    rows = [("JPY", day, Decimal("151.123456789"), None), ("EUR", day, None, None)]
    table = rates.factors_of(rows, "USD").to_pylist()
    jpy = table[0]
    assert jpy["factor_high"] * 10**6 + jpy["factor_low"] == jpy["factor"].scaleb(12)
    assert 0 <= jpy["factor_low"] < 10**6
    assert table[1]["factor"] is None and table[1]["factor_high"] is None


def test_other_aggregates_are_written_as_they_are() -> None:
    for aggregate in (
        "SUM(t.total_sales)",
        "AVG(CAST((t.total_sales * f.factor) AS DECIMAL(38, 14)))",
        "MAX((t.total_sales * f.factor))",
    ):
        assert split_sum_sql(aggregate) == aggregate


def test_an_amount_too_large_for_the_halves_is_summed_over_the_whole_factor(
    caplog: pytest.LogCaptureFixture,
) -> None:
    rows = sales_rows()
    # Ten billion dollars on one line: its product with the factor's high half passes the
    # 18 digits of a 64-bit decimal, which DuckDB refuses.
    huge = next(
        r
        for r in rows
        if r["store_id"] == "st_main" and local(2024, 3, 2) <= r["happened_at"] < local(2024, 3, 30)
    )
    huge["total_sales"] = Decimal("12345678901.23")
    con = connect(rows)
    text = "FROM sales SHOW total_sales GROUP BY store SINCE 2024-03-01 UNTIL 2024-03-31"
    with caplog.at_level(logging.INFO, logger="warehouse.query"):
        got = run_public(con, text, limits=Limits(rollups=False))
    assert "query rerun with whole exchange-rate factors" in caplog.text
    want = expected(
        frame(rows),
        gte=local(2024, 3, 1),
        lt=local(2024, 4, 1),
        group=["store"],
        metrics=[("total_sales", "sum", "total_sales")],
    )
    totals = {r["store"]: r["total_sales"] for r in got["rows"]}
    assert totals == {r["store"]: r["total_sales"] for r in want}
    assert set(totals) == {s.name for s in STORES.values()}
    assert totals["Main Street"] > Decimal("12345678901")


@pytest.mark.parametrize(
    ("text", "split"),
    [
        ("FROM sales SHOW total_sales GROUP BY store SINCE -30d", True),
        ("FROM sales SHOW average_order_value SINCE -30d", True),
        ("FROM sales SHOW orders GROUP BY store SINCE -30d", False),
        ("FROM sales SHOW max(total_sales) SINCE -30d", False),
    ],
)
def test_only_a_plan_with_a_converted_sum_is_rerun_over_the_whole_factor(
    text: str, split: bool
) -> None:
    # An OutOfRangeException of any other plan is not the halves' overflow: rerunning it
    # would pay its statements twice before failing the same way.
    plan = compile_query(
        text,
        stores=STORES,
        account_currency="EUR",
        account_timezone=ACCOUNT_ZONE,
        now=NOW,
    )
    assert splits_sums(plan) is split
