"""Values of different kinds in one query: HAVING compares like with like, the least or
greatest of a date field is that date, never a number, and an aggregate of a dimension
computed at query time (store, customer_type) reads what GROUP BY reads.

Before these checks, `HAVING total_sales > 'abc'` and `HAVING product_title = 5` were
accepted by the checker and failed while the rows were filtered (a 500), `max(created_at)`
answered 0, and `count_distinct(store)` named a column the facts do not have (a 500)."""

from __future__ import annotations

from datetime import UTC
from typing import Any

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from quarry.errors import InvalidQuery
from tests.warehouse.query.data import order_rows, run_public
from warehouse.query.executor import Limits

W = "SINCE 2024-03-01 UNTIL 2024-04-30"
GROUPED = f"FROM sales SHOW total_sales, orders GROUP BY product_title TIMESERIES day {W}"


def run(con: duckdb.DuckDBPyConnection, text: str) -> dict[str, Any]:
    return run_public(con, text, limits=Limits(max_groups=100_000))


def refused(con: duckdb.DuckDBPyConnection, text: str) -> list[str]:
    with pytest.raises(InvalidQuery) as exc:
        run(con, text)
    return [str(e["message"]) for e in exc.value.errors]


@pytest.mark.parametrize(
    ("having", "message"),
    [
        ("total_sales > 'abc'", "HAVING compares total_sales (a number) with 'abc' (text)"),
        ("total_sales = 'abc'", "compare numbers with numbers"),
        ("total_sales BETWEEN 'a' AND 'b'", "with 'a' (text)"),
        ("total_sales IN (1, 'a')", "with 'a' (text)"),
        ("total_sales > true", "with a boolean"),
        ("product_title > 5", "HAVING compares product_title (text) with a number"),
        ("product_title = total_sales", "with total_sales (a number): compare text with text"),
        ("day > 5", "HAVING compares day (a date) with a number"),
        ("product_title + 1 > 0", "Arithmetic takes numbers; product_title (text) is not one."),
        ("total_sales * 'a' > 0", "Arithmetic takes numbers; 'a' (text) is not one."),
        ("-day > 0", "Arithmetic takes numbers; day (a date) is not one."),
        ("product_title CONTAINS 5", "CONTAINS takes text in single quotes."),
        ("product_title MATCHES (x = 1)", "MATCHES filters by related records"),
    ],
)
def test_having_compares_values_of_one_kind(
    con: duckdb.DuckDBPyConnection, having: str, message: str
) -> None:
    found = refused(con, f"{GROUPED} HAVING {having}")
    assert any(message in m for m in found), found


def test_having_keeps_the_rows_its_comparisons_of_like_kinds_select(
    con: duckdb.DuckDBPyConnection,
) -> None:
    every = run(con, GROUPED)["rows"]
    kept = run(
        con,
        f"{GROUPED} HAVING total_sales > orders * 10 AND day >= '2024-03-15' "
        "AND product_title != 'x' AND NOT product_title STARTS WITH 'zz'",
    )["rows"]
    # A comparison with null is false, as in SQL: a row without a product title goes.
    expected = [
        r
        for r in every
        if r["total_sales"] > r["orders"] * 10
        and r["day"] >= "2024-03-15"
        and r["product_title"] is not None
    ]
    assert kept == expected and 0 < len(kept) < len(every)


def test_the_latest_and_earliest_of_a_date_field_are_instants(
    con: duckdb.DuckDBPyConnection,
) -> None:
    body = run(
        con,
        "FROM orders SHOW max(created_at) AS latest, min(created_at), count(id) "
        f"GROUP BY billing_country {W} WITH TOTALS",
    )
    orders = order_rows()
    for row in body["rows"]:
        theirs = [o["created_at"] for o in orders if o["billing_country"] == row["billing_country"]]
        assert row["latest"] == f"{max(theirs).astimezone(UTC):%Y-%m-%dT%H:%M:%SZ}"
        assert row["min_created_at"] == f"{min(theirs).astimezone(UTC):%Y-%m-%dT%H:%M:%SZ}"
    assert body["totals"]["latest"] == max(r["latest"] for r in body["rows"])
    assert {c["name"]: c["type"] for c in body["columns"]}["latest"] == "date"
    # ORDER BY and HAVING compare them as instants.
    newest_first = run(
        con,
        "FROM orders SHOW max(created_at) AS latest GROUP BY billing_country "
        f"{W} HAVING latest >= '2024-03-01' ORDER BY latest DESC",
    )["rows"]
    assert [r["latest"] for r in newest_first] == sorted(
        (r["latest"] for r in body["rows"]), reverse=True
    )


def test_a_date_takes_no_arithmetic_and_has_no_percent_change(
    con: duckdb.DuckDBPyConnection,
) -> None:
    for text in ("max(created_at) + 1", "-min(created_at)", "count(id) / max(created_at)"):
        found = refused(con, f"FROM orders SHOW {text} {W}")
        assert any("Arithmetic takes numbers and money; this value is a date." in m for m in found)
    body = run(
        con,
        "FROM orders SHOW max(created_at), count(id) TIMESERIES month "
        f"{W} COMPARE TO previous_period WITH PERCENT_CHANGE",
    )
    names = [c["name"] for c in body["columns"]]
    assert "comparison_max_created_at__previous_period" in names
    assert "percent_change_count_id__previous_period" in names
    assert "percent_change_max_created_at__previous_period" not in names


def test_top_ranks_by_a_date_latest_first(con: duckdb.DuckDBPyConnection) -> None:
    every = run(con, f"FROM orders SHOW max(created_at) AS latest GROUP BY order_name {W}")
    top = run(con, f"FROM orders SHOW max(created_at) AS latest GROUP BY ONLY TOP 3 order_name {W}")
    assert len(top["rows"]) == 3 and all(r["latest"].startswith("2024-0") for r in top["rows"])
    assert (
        sorted(r["latest"] for r in top["rows"])
        == sorted((r["latest"] for r in every["rows"]), reverse=True)[:3][::-1]
    )


# Operands of every kind HAVING can meet in GROUPED_WITH_DATE's rows.
_OPERANDS = (
    "total_sales", "orders", "billing_country", "day", "latest", "5", "-2.5", "'abc'",
    "'2024-03-10'", "true", "total_sales + 1", "billing_country * 2", "(orders - day)",
)  # fmt: skip
_COMPARISONS = ("=", "!=", "<", ">=")
GROUPED_WITH_DATE = (
    "FROM orders SHOW sum(total_price) AS total_sales, count(id) AS orders, "
    "max(created_at) AS latest GROUP BY billing_country TIMESERIES day " + W
)


@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(_OPERANDS), st.sampled_from(_COMPARISONS), st.sampled_from(_OPERANDS)
        ),
        min_size=1,
        max_size=3,
    )
)
def test_any_having_of_these_operands_answers_or_is_an_invalid_query(
    con: duckdb.DuckDBPyConnection, comparisons: list[tuple[str, str, str]]
) -> None:
    having = " OR ".join(f"{a} {op} {b}" for a, op, b in comparisons)
    try:
        run(con, f"{GROUPED_WITH_DATE} HAVING {having}")
    except InvalidQuery as exc:
        assert exc.errors, having


def test_aggregates_of_dimensions_computed_at_query_time(con: duckdb.DuckDBPyConnection) -> None:
    stores = run(con, f"FROM sales SHOW total_sales GROUP BY store {W}")["rows"]
    kinds = run(con, f"FROM sales SHOW orders GROUP BY new_or_returning_customer {W}")["rows"]
    body = run(
        con,
        "FROM sales SHOW count_distinct(store) AS stores, count(customer_type) AS typed, "
        "count(customer_id) AS with_customer, "
        f"count_distinct(new_or_returning_customer) AS kinds {W}",
    )
    (row,) = body["rows"]
    assert row["stores"] == len(stores) > 1
    assert row["typed"] == row["with_customer"] > 0
    assert row["kinds"] == len([k for k in kinds if k["new_or_returning_customer"]]) == 2
    by_store = run(con, f"FROM orders SHOW count(store) AS n, count(id) GROUP BY store {W}")
    assert all(r["n"] == r["count_id"] > 0 for r in by_store["rows"])
