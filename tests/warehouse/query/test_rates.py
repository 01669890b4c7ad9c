"""The day's rates from the cached histories: the day's rate or the latest earlier one,
None before the first, and a history read once per set of rate files."""

from __future__ import annotations

from contextlib import AbstractContextManager
from datetime import date
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from warehouse.query import kept_tables, rates
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


def _factors(con: duckdb.DuckDBPyConnection, name: str) -> dict[tuple[str, int], Decimal]:
    rows = con.execute(f"SELECT currency, date, factor FROM {name}").fetchall()
    return {(currency, day.day): factor for currency, day, factor in rows}


def test_factors_convert_to_the_target_and_are_kept_per_version(
    con: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    tables = kept_tables.KeptTables()
    days = [(date(2024, 1, 1), date(2024, 1, 5))]

    def kept(currencies: list[str]) -> AbstractContextManager[str]:
        return rates.kept_factors(con, tables, rates._source(con) or "", currencies, "EUR", days)

    with kept(["JPY", "EUR"]) as name:
        assert name is not None
        factors = _factors(con, name)
    assert factors == {
        (r["currency"], r["date"].day): r["factor"]
        for r in rates.factor_table(con, ["JPY", "EUR"], "EUR", days).to_pylist()
    }
    places = Decimal("1e-12")
    assert factors[("EUR", 1)] == 1  # the target itself, rate or not
    assert factors[("JPY", 1)] is None and factors[("JPY", 2)] is None  # no JPY rate yet
    assert factors[("JPY", 4)] == (Decimal("0.9") / Decimal("140")).quantize(places)
    assert factors[("JPY", 5)] == (Decimal("0.95") / Decimal("140")).quantize(places)
    with kept(["EUR", "JPY"]) as again:
        assert again == name  # the same set, not written twice
    newer = tmp_path / "newer.csv"
    newer.write_text("date,base,currency,rate\n2024-01-02,USD,EUR,0.5\n2024-01-02,USD,JPY,100\n")
    _snapshot(con, "snap_b", newer)
    with kept(["JPY", "EUR"]) as fresh:
        assert fresh != name
        assert _factors(con, fresh)[("JPY", 4)] == Decimal("0.005")


def test_idle_factor_sets_beyond_the_size_are_dropped_but_not_one_in_use(
    con: duckdb.DuckDBPyConnection,
) -> None:
    tables = kept_tables.KeptTables(size=2)

    def held(day: int) -> AbstractContextManager[str]:
        days = [(date(2024, 1, day), date(2024, 1, day))]
        return tables.held(con, day, lambda: rates.factor_table(con, ["JPY"], "EUR", days))

    def exists(name: str) -> bool:
        schema, table = name.split(".")[1:]
        found = con.execute(
            "SELECT count(*) FROM duckdb_tables() WHERE database_name = 'memory' "
            f"AND schema_name = '{schema}' AND table_name = '{table}'"
        ).fetchone()
        return bool(found and found[0])

    with held(1) as first:
        names = []
        for day in (2, 3, 4):
            with held(day) as name:
                names.append(name)
        assert exists(first)  # in use: kept though the least recently used
        # Two sets at most, the one in use among them: the idle ones go oldest first.
        assert [exists(n) for n in names] == [False, False, True]
        assert len(tables) == 2
    with held(5):
        pass
    assert not exists(first) and len(tables) == 2
