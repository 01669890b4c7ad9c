"""A TIMESERIES in time order is paged bucket by bucket (executor.filled_page): its pages
must equal those of the whole filled result sorted, which the oracle tests pin."""

from __future__ import annotations

from typing import Any

import duckdb
import pytest

from tests.warehouse.query.data import run_public
from warehouse.query import executor

QUERIES = [
    "FROM sales SHOW total_sales TIMESERIES minute SINCE 2024-03-01 UNTIL 2024-03-20",
    "FROM sales SHOW total_sales, orders GROUP BY billing_country, TOP 2 product_title "
    "TIMESERIES day SINCE 2023-04-01 UNTIL 2024-03-31",
    "FROM sales SHOW total_sales TIMESERIES hour SINCE 2023-04-01 UNTIL 2024-03-31 "
    "LIMIT 50 OFFSET 3000",
    "FROM sales SHOW total_sales, customers GROUP BY store TIMESERIES day "
    "SINCE 2024-01-01 UNTIL 2024-03-31 COMPARE TO previous_period "
    "WITH PERCENT_CHANGE, CUMULATIVE_VALUES",
    "FROM sales SHOW total_sales GROUP BY store, sales_channel TIMESERIES week "
    "SINCE 2024-01-01 UNTIL 2024-03-31 WITH GROUP_TOTALS, TOTALS LIMIT 30 OFFSET 5",
    "FROM sales SHOW net_sales GROUP BY sales_channel TIMESERIES week "
    "SINCE 2023-01-01 UNTIL 2024-03-31 HAVING net_sales > 0 LIMIT 7",
    "FROM sales SHOW gross_sales GROUP BY ONLY TOP 3 product_title TIMESERIES day "
    "SINCE 2024-02-01 UNTIL 2024-02-29 WITH TOTALS ORDER BY day ASC LIMIT 40",
    "FROM sales SHOW total_sales TIMESERIES hour SINCE 2024-03-09 UNTIL 2024-03-11 "
    "WITH TIMEZONE 'America/New_York'",
    "FROM sales SHOW orders GROUP BY store TIMESERIES month SINCE 2024-01-01 UNTIL 2024-04-30 "
    "HAVING orders > 100",
    # Without dimensions the page's buckets bound the events read (executor.page_window).
    "FROM sales SHOW total_sales, customers TIMESERIES day SINCE 2023-06-01 UNTIL 2024-03-31 "
    "WITH CUMULATIVE_VALUES LIMIT 40 OFFSET 200",
    "FROM sales SHOW total_sales TIMESERIES day SINCE 2023-06-01 UNTIL 2024-03-31 "
    "COMPARE TO previous_year WITH PERCENT_CHANGE LIMIT 30 OFFSET 250",
    "FROM sales SHOW net_sales TIMESERIES week SINCE 2023-01-01 UNTIL 2024-03-31 LIMIT 10",
]


def _whole(con: duckdb.DuckDBPyConnection, text: str, monkeypatch: Any) -> dict[str, Any]:
    with monkeypatch.context() as m:
        m.setattr(executor._Run, "pages_in_time_order", lambda self: False)
        return run_public(con, text)


@pytest.mark.parametrize("text", QUERIES)
def test_a_page_in_time_order_equals_the_sorted_whole(
    con: duckdb.DuckDBPyConnection, text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run_public(con, text) == _whole(con, text, monkeypatch)


def test_a_long_series_lists_only_its_page(con: duckdb.DuckDBPyConnection) -> None:
    # 19 days of minutes: 27,360 buckets, of which the default page shows the first 1,000.
    out = run_public(
        con, "FROM sales SHOW total_sales TIMESERIES minute SINCE 2024-03-01 UNTIL 2024-03-19"
    )
    assert len(out["rows"]) == 1000
    assert out["truncated"] is True
    assert out["rows"][0]["minute"] == "2024-03-01T00:00:00-05:00"
    assert out["rows"][-1]["minute"] == "2024-03-01T16:39:00-05:00"


def test_a_page_reads_the_events_of_its_buckets_only() -> None:
    """The page's window ends where its last bucket (and one more, for `truncated`) does."""
    from datetime import UTC, datetime
    from zoneinfo import ZoneInfo

    from warehouse.query.dates import Clock, Window, first_buckets

    clock = Clock(datetime(2024, 4, 15, tzinfo=UTC), ZoneInfo("America/New_York"))
    window = Window(datetime(2024, 3, 1, 5, tzinfo=UTC), datetime(2024, 4, 1, 4, tzinfo=UTC))
    # 3 days of the window and the start of a fourth: New York midnight of March 4.
    assert first_buckets("day", window, clock, 3) == Window(
        window.gte, datetime(2024, 3, 4, 5, tzinfo=UTC)
    )
    # Minutes: the 61st starts an hour in.
    assert first_buckets("minute", window, clock, 60).lt == datetime(2024, 3, 1, 6, tzinfo=UTC)
    # Fewer buckets than asked: the whole window.
    assert first_buckets("month", window, clock, 5) == window
