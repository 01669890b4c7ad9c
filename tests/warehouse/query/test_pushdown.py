"""The page cut in SQL (ORDER BY metric LIMIT, TOP n) returns exactly what sorting every
group in Python returns: same rows, same order, same truncation, same totals."""

from __future__ import annotations

from typing import Any

import duckdb
import pytest

from tests.warehouse.query.data import (
    ACCOUNT_CURRENCY,
    ACCOUNT_ZONE,
    NOW,
    STORES,
    run_public,
)
from warehouse.query import Limits, compiler, executor, run_query

M = "SINCE 2024-03-01 UNTIL 2024-03-31"

QUERIES = [
    f"FROM sales SHOW total_sales GROUP BY product_title ORDER BY total_sales DESC LIMIT 3 {M}",
    f"FROM sales SHOW total_sales GROUP BY product_title ORDER BY total_sales LIMIT 4 {M}",
    f"FROM sales SHOW orders GROUP BY customer_id ORDER BY orders DESC LIMIT 5 {M}",
    f"FROM sales SHOW orders GROUP BY customer_id ORDER BY orders DESC LIMIT 5 OFFSET 3 {M}",
    f"FROM sales SHOW orders, total_sales GROUP BY store, sales_channel "
    f"ORDER BY orders DESC, total_sales LIMIT 4 {M}",
    f"FROM sales SHOW total_sales GROUP BY order_id ORDER BY total_sales DESC {M}",
    f"FROM sales SHOW total_sales GROUP BY product_title ORDER BY total_sales DESC LIMIT 2 "
    f"{M} WITH CURRENCY 'JPY'",
    f"FROM sales SHOW total_sales GROUP BY customer_id ORDER BY total_sales DESC LIMIT 6 "
    f"{M} WITH CURRENCY 'EUR', TOTALS",
    f"FROM sales SHOW min(total_sales) GROUP BY product_title ORDER BY min_total_sales LIMIT 3 {M}",
    f"FROM sales SHOW total_sales GROUP BY TOP 3 product_title {M} WITH TOTALS",
    f"FROM sales SHOW total_sales GROUP BY TOP 3 product_vendor {M}",
    f"FROM sales SHOW orders GROUP BY ONLY TOP 2 customer_id {M}",
    f"FROM sales SHOW orders GROUP BY TOP 4 customer_id {M} WITH CURRENCY 'JPY'",
    f"FROM sales SHOW total_sales, orders GROUP BY TOP 2 product_title, store {M}",
    f"FROM sales SHOW total_sales GROUP BY TOP 3 product_title TIMESERIES week {M}",
    f"FROM sales SHOW total_sales GROUP BY TOP 2 product_title {M} COMPARE TO previous_period",
    # TOP ranked within the dimensions before it: the cut is per group of them.
    f"FROM sales SHOW total_sales GROUP BY store, TOP 2 product_title {M}",
    f"FROM sales SHOW orders GROUP BY store, sales_channel, ONLY TOP 3 customer_id {M}",
    f"FROM sales SHOW total_sales GROUP BY store, TOP 2 product_title, sales_channel "
    f"TIMESERIES week {M} COMPARE TO previous_period",
]


run = run_public


@pytest.mark.parametrize("text", QUERIES)
def test_cut_in_sql_matches_sorting_every_group(
    con: duckdb.DuckDBPyConnection, text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    cut = run(con, text)
    whole = compiler.candidates_sql

    def every_group(
        base: Any, part: int, n: int, descending: bool, margin: Any = None, within: Any = ()
    ) -> Any:
        # No cut: every group reaches Python, which sorts them all (the reference).
        return whole(base, part, 10**9, descending, margin, within)

    monkeypatch.setattr(executor, "candidates_sql", every_group)
    assert cut == run(con, text)


def test_page_cut_in_sql_still_refuses_too_many_groups(con: duckdb.DuckDBPyConnection) -> None:
    from quarry.errors import InvalidQuery

    with pytest.raises(InvalidQuery) as exc:
        run_query(
            con,
            f"FROM sales SHOW total_sales GROUP BY order_id ORDER BY total_sales LIMIT 5 {M}",
            stores=STORES,
            account_currency=ACCOUNT_CURRENCY,
            account_timezone=ACCOUNT_ZONE,
            now=NOW,
            limits=Limits(max_groups=10),
        )
    assert exc.value.errors[0]["message"].startswith("The result would have about")


def test_reading_stops_one_row_past_the_limit(con: duckdb.DuckDBPyConnection) -> None:
    from quarry.errors import InvalidQuery

    with pytest.raises(InvalidQuery) as exc:
        run_query(
            con,
            f"FROM sales SHOW total_sales GROUP BY order_id ORDER BY order_id {M}",
            stores=STORES,
            account_currency=ACCOUNT_CURRENCY,
            account_timezone=ACCOUNT_ZONE,
            now=NOW,
            limits=Limits(max_groups=10),
        )
    assert exc.value.errors[0]["message"].startswith(
        "The result would have more than the 10 rows a query may return"
    )
