"""The day's exchange rate per USD of each currency, from histories kept in memory.

A money query needs, for every currency in scope and every day of its windows, the rate
of that day or the latest earlier one. Asked of DuckDB each time, that lookup cost a money
query 15-20 ms however small its result. The rates a snapshot reads are one lake version
of exchange_rates, which never changes, so each currency's history is read once per
version (the reader names it in a cursor variable, warehouse.reader.RATES_SOURCE_VARIABLE)
and every lookup after that is a bisection in Python.

The factors a query joins (per currency and day: the query currency's rate over the
currency's) are kept too, per rates version, currencies, query currency and days, as
tables of the reader's DuckDB (warehouse.query.kept_tables): building them for a year
of days and five currencies cost a money query more than its statement (20 of 58 ms for a
JPY store's year by month at 1M orders, with the 10M seed beside it), and a dashboard asks
the same windows again and again.
"""

from __future__ import annotations

import threading
from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import date, timedelta
from decimal import Decimal, localcontext
from typing import Generic, TypeVar

import duckdb
import pyarrow as pa

from warehouse.query import kept_tables
from warehouse.reader import cursor_variables
from warehouse.sql_values import bind

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class _Kept(Generic[K, V]):
    """The values of the `size` most recently used keys, shared by the process's threads;
    a missing one is made outside the lock (two threads may both make it: the same value)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._values: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K, make: Callable[[], V]) -> V:
        with self._lock:
            found = self._values.get(key)
            if found is not None:
                self._values.move_to_end(key)
                return found
        made = make()
        with self._lock:
            self._values[key] = made
            while len(self._values) > self.size:
                self._values.popitem(last=False)
        return made


# (rates version, currency) -> (dates ascending, rate of each date); a currency's history
# is a few thousand entries, and an entry is dropped once 256 newer ones were read.
History = tuple[list[date], list[Decimal]]
_histories: _Kept[tuple[str, str], History] = _Kept(256)
# ("factors", rates version, currencies, query currency, day ranges): what a factor set
# depends on (the kind first: kept_tables holds the stores too).
FactorKey = tuple[str, str, frozenset[str], str, tuple[tuple[date, date], ...]]
# Factors are kept to 12 places (so that the sums in SQL stay exact).
_FACTOR_PLACES = Decimal("1e-12")
# Each factor also in two halves of its 12-place units, factor = (high * 10^6 + low) / 10^12,
# each a DECIMAL(18, 0): DuckDB multiplies a DECIMAL(18, 2) amount by one in 64 bits, where
# the 20-digit factor takes a 128-bit product (warehouse.query.fields.split_sum_sql).
SPLIT_UNITS = 10**6
FACTOR_SCHEMA = pa.schema(
    [
        ("currency", pa.string()),
        ("date", pa.date32()),
        ("factor", pa.decimal128(20, 12)),
        ("factor_high", pa.decimal128(18, 0)),
        ("factor_low", pa.decimal128(18, 0)),
    ]
)


def _source(cursor: duckdb.DuckDBPyConnection) -> str | None:
    """What exchange_rates reads in this cursor's snapshot (a reader and a lake version), or
    None on a cursor that is not a reader's (then nothing is kept)."""
    return cursor_variables(cursor)[1]


def _read(cursor: duckdb.DuckDBPyConnection, currency: str) -> History:
    rows = cursor.execute(
        bind(
            "SELECT date, rate FROM exchange_rates WHERE base = 'USD' AND currency = ? "
            "ORDER BY date",
            [currency],
        )
    ).fetchall()
    return [r[0] for r in rows], [r[1] for r in rows]


def history(cursor: duckdb.DuckDBPyConnection, currency: str, source: str | None) -> History:
    """Units of `currency` per USD by date, ascending."""
    if source is None:
        return _read(cursor, currency)
    return _histories.get((source, currency), lambda: _read(cursor, currency))


def _on_or_before(rates: History, day: date) -> Decimal | None:
    index = bisect_right(rates[0], day)
    return rates[1][index - 1] if index else None


@contextmanager
def kept_factors(
    cursor: duckdb.DuckDBPyConnection,
    tables: kept_tables.KeptTables,
    source: str,
    currencies: Iterable[str],
    target: str,
    ranges: Sequence[tuple[date, date]],
) -> Iterator[str]:
    """The name of a table of the reader's DuckDB (`tables`, on a cursor whose rates source
    is `source`) holding factors_of(daily_rates(...)), kept per rates version (see the
    module's docstring), for the block."""
    wanted = frozenset(currencies)
    key: FactorKey = ("factors", source, wanted, target, tuple(ranges))
    with tables.held(
        cursor,
        key,
        lambda: factors_of(_daily_rates(cursor, wanted, target, ranges, source), target),
    ) as name:
        yield name


def factor_table(
    cursor: duckdb.DuckDBPyConnection,
    currencies: Iterable[str],
    target: str,
    ranges: Sequence[tuple[date, date]],
) -> pa.Table:
    """factors_of(daily_rates(...)), made anew (kept_factors keeps them)."""
    return factors_of(daily_rates(cursor, currencies, target, ranges), target)


def factors_of(
    rows: Iterable[tuple[str, date, Decimal | None, Decimal | None]], target: str
) -> pa.Table:
    """(currency, date, factor, its halves) from daily_rates' rows: the factor converts an
    amount in the currency to `target`, rate(target) / rate(currency), both per USD; null
    where a rate is missing (only an error if a row needs one, which SQL checks:
    missing_fx)."""
    out: dict[str, list[object]] = {
        "currency": [], "date": [], "factor": [], "factor_high": [], "factor_low": []
    }  # fmt: skip
    with localcontext() as ctx:
        ctx.prec = 34
        for currency, day, theirs, mine in rows:
            factor: Decimal | None = Decimal(1)
            if currency != target:
                mine = Decimal(1) if target == "USD" else mine
                theirs = Decimal(1) if currency == "USD" else theirs
                factor = (
                    None
                    if mine is None or theirs is None
                    # Divided here, not in DuckDB, which divides decimals as doubles.
                    else (Decimal(mine) / Decimal(theirs)).quantize(_FACTOR_PLACES)
                )
            high, low = (None, None) if factor is None else _halves(factor)
            out["currency"].append(currency)
            out["date"].append(day)
            out["factor"].append(factor)
            out["factor_high"].append(high)
            out["factor_low"].append(low)
    return pa.table(out, schema=FACTOR_SCHEMA)


def _halves(factor: Decimal) -> tuple[Decimal, Decimal]:
    """(high, low) with factor = (high * SPLIT_UNITS + low) / 10^12 exactly, low in
    [0, SPLIT_UNITS): factors are positive and have 12 places."""
    high, low = divmod(int(factor.scaleb(12)), SPLIT_UNITS)
    return Decimal(high), Decimal(low)


def daily_rates(
    cursor: duckdb.DuckDBPyConnection,
    currencies: Iterable[str],
    target: str,
    ranges: Sequence[tuple[date, date]],
) -> list[tuple[str, date, Decimal | None, Decimal | None]]:
    """(currency, day, its rate, the target's rate) per USD for each currency and each day
    of the inclusive ranges: the day's rate or the latest earlier one, None when there is
    none yet."""
    return _daily_rates(cursor, currencies, target, ranges, _source(cursor))


def _daily_rates(
    cursor: duckdb.DuckDBPyConnection,
    currencies: Iterable[str],
    target: str,
    ranges: Sequence[tuple[date, date]],
    source: str | None,
) -> list[tuple[str, date, Decimal | None, Decimal | None]]:
    days: set[date] = set()
    for first, last in ranges:
        days.update(first + timedelta(days=k) for k in range((last - first).days + 1))
    ordered = sorted(days)
    mine = history(cursor, target, source)
    theirs_by_currency = {c: history(cursor, c, source) for c in sorted(set(currencies))}
    return [
        (currency, day, _on_or_before(theirs, day), _on_or_before(mine, day))
        for currency, theirs in theirs_by_currency.items()
        for day in ordered
    ]
