"""The JSON Lines writer's SQL formatting of timestamps and decimals equals what its Python
path (and Python's isoformat) writes, across zones, DST changes, historic offsets with
seconds, microseconds and years below 1000."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from zoneinfo import ZoneInfo

import duckdb
import pytest

from exports.configs.options import FormatOptions
from exports.files.csv_copy import zone_offsets
from exports.files.jsonl_writer import json_value, value_sql

INSTANTS = [
    datetime(2024, 3, 31, 0, 59, 59, tzinfo=UTC),  # Berlin: just before summer time
    datetime(2024, 3, 31, 1, 0, 0, tzinfo=UTC),  # and at it
    datetime(2024, 10, 27, 0, 30, 0, 123456, tzinfo=UTC),
    datetime(2024, 1, 15, 12, 30, 45, 5, tzinfo=UTC),
    datetime(1900, 6, 1, 12, 0, 0, tzinfo=UTC),  # Amsterdam: +00:19:32 then
    datetime(999, 1, 2, 3, 4, 5, tzinfo=UTC),
]


@pytest.mark.parametrize("zone", ["UTC", "Europe/Berlin", "Europe/Amsterdam", "Asia/Kolkata"])
def test_timestamps_in_sql_equal_isoformat(zone: str) -> None:
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.execute("CREATE TABLE t (ts TIMESTAMPTZ)")
    con.executemany("INSERT INTO t VALUES (?)", [[i] for i in INSTANTS])
    ((low, high),) = con.execute("SELECT epoch_us(min(ts)), epoch_us(max(ts)) FROM t").fetchall()
    offsets = zone_offsets(ZoneInfo(zone), low, high)
    sql = value_sql('"ts"', "TIMESTAMP WITH TIME ZONE", offsets)
    got = [row[0] for row in con.execute(f'SELECT {sql} FROM t ORDER BY "ts"').fetchall()]
    options = FormatOptions(time_zone=zone)
    want = [json_value(i, options) for i in sorted(INSTANTS)]
    assert got == want
    assert want[-1].startswith("2024-10-27")


def test_decimals_are_exact_text() -> None:
    con = duckdb.connect()
    values = ["0.00", "12.30", "-0.05", "99999999.99", "1234567890123456.78"]
    sql = value_sql("d", "DECIMAL(18,2)", ((0, 0),))
    got = [r[0] for r in con.execute(
        f"SELECT {sql} FROM (SELECT CAST(v AS DECIMAL(18, 2)) AS d FROM unnest(?) t(v))",
        [values],
    ).fetchall()]  # fmt: skip
    assert got == [json_value(Decimal(v), FormatOptions()) for v in values] == values
