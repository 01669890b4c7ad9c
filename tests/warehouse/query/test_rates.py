"""The day's rates from the cached histories: the day's rate or the latest earlier one,
None before the first, and a history read once per set of rate files."""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from warehouse.query import rates
from warehouse.reader import RATES_SOURCE_VARIABLE


def _snapshot(con: duckdb.DuckDBPyConnection, schema: str, csv: Path) -> None:
    # As the reader does: a schema per snapshot whose views read files.
    con.execute(f"CREATE SCHEMA {schema}")
    con.execute(
        f"CREATE VIEW {schema}.exchange_rates AS SELECT CAST(date AS DATE) AS date, base, "
        f"currency, CAST(rate AS DECIMAL(24, 10)) AS rate FROM read_csv('{csv}', header = true)"
    )
    con.execute(f"SET search_path = '{schema}'")
    con.execute(f"SET VARIABLE {RATES_SOURCE_VARIABLE} = '{schema}'")


@pytest.fixture()
def con(tmp_path: Path) -> duckdb.DuckDBPyConnection:
    csv = tmp_path / "rates.csv"
    csv.write_text(
        "date,base,currency,rate\n"
        "2024-01-02,USD,EUR,0.9\n2024-01-05,USD,EUR,0.95\n"  # 3rd and 4th missing
        "2024-01-03,USD,JPY,140\n2024-01-03,EUR,JPY,150\n"  # a rate of another base
    )
    connection = duckdb.connect()
    _snapshot(connection, "snap_a", csv)
    return connection


def test_the_days_rate_or_the_latest_earlier_one(con: duckdb.DuckDBPyConnection) -> None:
    rows = rates.daily_rates(con, ["JPY", "EUR"], "EUR", [(date(2024, 1, 1), date(2024, 1, 5))])
    eur = {1: None, 2: Decimal("0.9"), 3: Decimal("0.9"), 4: Decimal("0.9"), 5: Decimal("0.95")}
    jpy = {1: None, 2: None, 3: Decimal("140"), 4: Decimal("140"), 5: Decimal("140")}
    assert rows == [("EUR", date(2024, 1, d), eur[d], eur[d]) for d in range(1, 6)] + [
        ("JPY", date(2024, 1, d), jpy[d], eur[d]) for d in range(1, 6)
    ]


def test_overlapping_ranges_list_each_day_once(con: duckdb.DuckDBPyConnection) -> None:
    ranges = [(date(2024, 1, 4), date(2024, 1, 5)), (date(2024, 1, 3), date(2024, 1, 4))]
    rows = rates.daily_rates(con, ["EUR"], "EUR", ranges)
    assert [r[1].day for r in rows] == [3, 4, 5]


def test_a_history_is_read_once_per_set_of_files(
    con: duckdb.DuckDBPyConnection, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads: list[str] = []
    real = rates._read

    def counting(cursor: duckdb.DuckDBPyConnection, currency: str) -> rates.History:
        reads.append(currency)
        return real(cursor, currency)

    monkeypatch.setattr(rates, "_read", counting)
    monkeypatch.setattr(rates, "_histories", type(rates._histories)(rates._histories.size))
    days = [(date(2024, 1, 1), date(2024, 1, 5))]
    rates.daily_rates(con, ["EUR"], "USD", days)
    rates.daily_rates(con, ["EUR"], "USD", days)
    assert reads == ["USD", "EUR"]
    newer = tmp_path / "newer.csv"
    newer.write_text("date,base,currency,rate\n2024-01-02,USD,EUR,0.5\n")
    _snapshot(con, "snap_b", newer)
    rows = rates.daily_rates(con, ["EUR"], "USD", days)
    assert reads == ["USD", "EUR", "USD", "EUR"]
    assert rows[-1] == ("EUR", date(2024, 1, 5), Decimal("0.5"), None)


def test_factors_convert_to_the_target_and_are_kept_per_version(
    con: duckdb.DuckDBPyConnection, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        rates, "_factor_tables", type(rates._factor_tables)(rates._factor_tables.size)
    )
    days = [(date(2024, 1, 1), date(2024, 1, 5))]
    table = rates.factor_table(con, ["JPY", "EUR"], "EUR", days)
    factors = {(r["currency"], r["date"].day): r["factor"] for r in table.to_pylist()}
    places = Decimal("1e-12")
    assert factors[("EUR", 1)] == 1  # the target itself, rate or not
    assert factors[("JPY", 1)] is None and factors[("JPY", 2)] is None  # no JPY rate yet
    assert factors[("JPY", 4)] == (Decimal("0.9") / Decimal("140")).quantize(places)
    assert factors[("JPY", 5)] == (Decimal("0.95") / Decimal("140")).quantize(places)
    assert rates.factor_table(con, ["EUR", "JPY"], "EUR", days) is table
    newer = tmp_path / "newer.csv"
    newer.write_text("date,base,currency,rate\n2024-01-02,USD,EUR,0.5\n2024-01-02,USD,JPY,100\n")
    _snapshot(con, "snap_b", newer)
    fresh = rates.factor_table(con, ["JPY", "EUR"], "EUR", days)
    assert fresh is not table
    assert {(r["currency"], r["date"].day): r["factor"] for r in fresh.to_pylist()}[
        ("JPY", 4)
    ] == Decimal("0.005")
