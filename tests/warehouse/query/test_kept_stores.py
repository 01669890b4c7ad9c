"""A reader's cursor joins the readable stores from a table the reader keeps
(warehouse.query.kept_tables): the same answers as the stores registered per query, one
table per set of stores, a new one when a store's name changes."""

from __future__ import annotations

from typing import Any, cast

import duckdb
import pytest

from tests.warehouse.query.data import ACCOUNT_CURRENCY, ACCOUNT_ZONE, NOW, STORES
from warehouse.query import Limits, kept_tables, run_query
from warehouse.query.plan import StoreInfo
from warehouse.reader import READER_VARIABLE

TEXT = (
    "FROM sales SHOW total_sales, orders GROUP BY store, day_of_week "
    "SINCE 2024-03-01 UNTIL 2024-03-31 ORDER BY store, day_of_week"
)


def _answer(cursor: duckdb.DuckDBPyConnection, stores: dict[str, StoreInfo]) -> dict[str, Any]:
    return run_query(
        cursor,
        TEXT,
        stores=stores,
        account_currency=ACCOUNT_CURRENCY,
        account_timezone=ACCOUNT_ZONE,
        now=NOW,
        limits=Limits(rollups=False),  # the hand-made tables have no rollups
    ).public()


def _kept(cursor: duckdb.DuckDBPyConnection) -> int:
    row = cursor.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE database_name = 'memory' "
        f"AND schema_name = '{kept_tables.SCHEMA}'"
    ).fetchone()
    return int(row[0]) if row else 0


def test_a_readers_cursor_joins_the_stores_it_keeps(
    con: duckdb.DuckDBPyConnection, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kept_tables, "_databases", {})
    registered = _answer(con.cursor(), STORES)  # not a reader's: registered per query
    reader = con.cursor()
    reader.execute(f"SET VARIABLE {READER_VARIABLE} = 'kept-stores-test'")
    before = _kept(reader)

    assert _answer(reader, STORES) == registered
    assert _answer(reader, STORES) == registered
    assert _kept(reader) == before + 1  # one table for the same stores, asked twice

    renamed = {**STORES, "st_main": StoreInfo("Main Street Renamed", "USD", "America/New_York")}
    answer = _answer(reader, renamed)
    names = {row["store"] for row in answer["rows"]}
    assert "Main Street Renamed" in names and "Main Street" not in names
    assert _kept(reader) == before + 2
    # Nothing registered on the cursor outlives a query.
    assert not reader.execute(
        "SELECT view_name FROM duckdb_views() WHERE view_name LIKE 'quarry_query_%'"
    ).fetchall()


def _scoped(
    cursor: duckdb.DuckDBPyConnection, text: str, store_ids: list[str] | None
) -> tuple[dict[str, Any], list[str]]:
    """The answer to `text` over `store_ids` of the test stores, and the statements sent."""
    sent: list[str] = []

    class Recording:
        def __getattr__(self, name: str) -> Any:
            return getattr(cursor, name)

        def execute(self, sql: str, *args: Any) -> Any:
            sent.append(sql)
            return cursor.execute(sql, *args)

    answer = run_query(
        cast(duckdb.DuckDBPyConnection, Recording()),
        text,
        stores=STORES,
        account_currency=ACCOUNT_CURRENCY,
        account_timezone=ACCOUNT_ZONE,
        store_ids=store_ids,
        now=NOW,
        limits=Limits(rollups=False),
    ).public()
    return answer, sent


WHERE_MAIN = (
    "FROM sales SHOW total_sales GROUP BY store WHERE store = 'Main Street' "
    "SINCE 2024-03-01 UNTIL 2024-03-31"
)


def test_a_where_within_the_scope_stands_for_the_scopes_in(
    con: duckdb.DuckDBPyConnection,
) -> None:
    answer, sent = _scoped(con.cursor(), WHERE_MAIN, None)
    assert [r["store"] for r in answer["rows"]] == ["Main Street"]
    aggregate = next(s for s in sent if "GROUP BY" in s)
    assert "'st_main'" in aggregate and "'st_berlin'" not in aggregate


def test_a_where_outside_the_requests_stores_keeps_the_scopes_in(
    con: duckdb.DuckDBPyConnection,
) -> None:
    # Main Street is readable, but the request asked for the Berlin shop only.
    answer, sent = _scoped(con.cursor(), WHERE_MAIN, ["st_berlin"])
    assert answer["rows"] == []
    aggregate = next(s for s in sent if "GROUP BY" in s)
    assert "'st_berlin'" in aggregate
