"""The day's exchange rate per USD of each currency, from histories kept in memory.

A money query needs, for every currency in scope and every day of its windows, the rate
of that day or the latest earlier one. Asked of DuckDB each time, that lookup cost a money
query 15-20 ms however small its result. The rates a snapshot reads are one lake version
of exchange_rates, which never changes, so each currency's history is read once per
version (the reader names it in a cursor variable, warehouse.reader.RATES_SOURCE_VARIABLE)
and every lookup after that is a bisection in Python.
"""

from __future__ import annotations

import threading
from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from datetime import date, timedelta
from decimal import Decimal

import duckdb

from warehouse.reader import RATES_SOURCE_VARIABLE
from warehouse.sql_values import bind

# (rates version, currency) -> (dates ascending, rate of each date); a currency's history
# is a few thousand entries, and an entry is dropped once 256 newer ones were read.
History = tuple[list[date], list[Decimal]]
_MAX_HISTORIES = 256
_histories: OrderedDict[tuple[str, str], History] = OrderedDict()
_lock = threading.Lock()


def _source(cursor: duckdb.DuckDBPyConnection) -> str | None:
    """What exchange_rates reads in this cursor's snapshot (a reader and a lake version), or
    None on a cursor that is not a reader's (then nothing is kept)."""
    row = cursor.execute(f"SELECT getvariable('{RATES_SOURCE_VARIABLE}')").fetchone()
    return None if row is None or row[0] is None else str(row[0])


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
    key = (source, currency)
    with _lock:
        found = _histories.get(key)
        if found is not None:
            _histories.move_to_end(key)
            return found
    found = _read(cursor, currency)
    with _lock:
        _histories[key] = found
        while len(_histories) > _MAX_HISTORIES:
            _histories.popitem(last=False)
    return found


def _on_or_before(rates: History, day: date) -> Decimal | None:
    index = bisect_right(rates[0], day)
    return rates[1][index - 1] if index else None


def daily_rates(
    cursor: duckdb.DuckDBPyConnection,
    currencies: Iterable[str],
    target: str,
    ranges: Sequence[tuple[date, date]],
) -> list[tuple[str, date, Decimal | None, Decimal | None]]:
    """(currency, day, its rate, the target's rate) per USD for each currency and each day
    of the inclusive ranges: the day's rate or the latest earlier one, None when there is
    none yet."""
    source = _source(cursor)
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
