"""A reader's cursor joins the readable stores from a table the reader keeps
(warehouse.query.kept_tables): the same answers as the stores registered per query, one
table per set of stores, a new one when a store's name changes."""

from __future__ import annotations

from typing import Any

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
