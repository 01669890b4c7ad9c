"""Per query: the rollup set that gives the facts' answer exactly, or the facts.

The checker's plan reads the facts (`sales t`) through SQL fragments: the grouped
dimensions, the WHERE conditions, the aggregates, the event's local time and its
store-local date. A rollup row carries the facts' column names for what it keeps (its
dimensions, store, currency, the sums under the measures' own names), so a plan that
reads only those runs unchanged on it once four things are swapped:

- the table, whose `happened_at` is the row's instant (the UTC hour, or an event of the
  store-local day: exactness.py says when the window cuts rows whole);
- the local time, from the row's instant (hours) or its store-local date (days);
- the exchange-rate date, the row's store-local date;
- the aggregates: `orders` becomes the sum of the rows' distinct-order counts, a filtered
  sum (returns, recorded costs) the sum of its own column. Any other aggregate (distinct
  customers, counts, min, max, median, averages) is not additive: the facts answer.

A key's figures may lie in several rows (a sync appends its change as signed rows:
build.py), so a sum is null where its events' count sums to 0, as SQL's SUM over no facts
is, and a group exists where its rows' events sum above 0 (the compiler's HAVING, from
the source's `events`).

Every set's dimensions are order-level (store, channel, billing country), across which
`orders` adds up: a line-level set (products) would answer `orders` only grouped by all
its dimensions, with no totals, GROUP_TOTALS or TOP's Other adding its groups up.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator

from warehouse.query.compiler import kept_stores
from warehouse.query.dates import Window
from warehouse.query.fields import ORDERS_SQL, zone_time_sql
from warehouse.query.plan import (
    Column,
    Part,
    Plan,
    RBetween,
    RBool,
    RCompare,
    RCond,
    RIn,
    RMatch,
    RNot,
    RNull,
    Source,
)
from warehouse.query.sql import Sql
from warehouse.rollups import exactness
from warehouse.rollups.definitions import (
    EVENTS,
    FACTS,
    FILTERED,
    MEASURES,
    ORDERS,
    SETS,
    RollupSet,
    filtered_column,
    presence_column,
)

FACTS_SOURCE = "facts"

# The engine's aggregates (warehouse.query.fields and its aggregates table) that a rollup
# sums: `orders`, and SUM of a column, converted or not, filtered or not.
_SUM = re.compile(
    r"^SUM\((?P<open>\()?t\.(?P<col>\w+)(?P<fx> \* f\.factor\))?\)"
    r"(?: FILTER \(WHERE (?P<filter>.+)\))?$"
)
_FILTERED = {(m, f.sql): (filtered_column(m, f), presence_column(m, f)) for m, f in FILTERED}
_COLUMN = re.compile(r"\b([a-z_]+)\.(\w+)")
# Granularities a set's buckets are fine enough for.
_DAY_GRAINS = {"day", "week", "month", "quarter", "year", "day_of_week", "week_of_year",
               "month_of_year"}  # fmt: skip
_HOUR_GRAINS = _DAY_GRAINS | {"hour", "hour_of_day"}


@dataclasses.dataclass(frozen=True)
class Choice:
    plan: Plan
    source: str  # "facts" or the rollup table's name


def choose(plan: Plan, enabled: bool = True) -> Choice:
    """The plan to run: `plan` itself on the facts, or rewritten for the smallest rollup
    set that answers it exactly."""
    if not enabled or plan.source.table != FACTS or not plan.store_ids:
        return Choice(plan, FACTS_SOURCE)
    parts = [_part(p) for p in plan.parts]
    if any(p is None for p in parts):
        return Choice(plan, FACTS_SOURCE)
    summed = [p for p in parts if p is not None]
    local = plan.local_sql.text
    time_dims = [d for d in plan.dims if d.granularity is not None]
    grains = {g for g in [plan.granularity, *(d.granularity for d in time_dims)] if g}
    if any(local not in (d.sql or "") for d in time_dims):
        return Choice(plan, FACTS_SOURCE)
    needed = _columns(plan, time_dims)
    if needed is None:
        return Choice(plan, FACTS_SOURCE)
    windows = [plan.window, *(c.window for c in plan.comparisons)]
    for rollup in SETS:
        if not needed <= {"store_id", "currency", *rollup.dims}:
            continue
        if not _exact(plan, rollup, grains, windows):
            continue
        return Choice(_rewritten(plan, rollup, summed), rollup.table)
    return Choice(plan, FACTS_SOURCE)


def _part(part: Part) -> Part | None:
    """The rollup's aggregate for one of the engine's, or None when none is exact."""
    if part.sql == ORDERS_SQL:
        return Part(f"SUM(t.{ORDERS})", part.empty)
    match = _SUM.match(part.sql)
    if match is None or bool(match["open"]) != bool(match["fx"]):
        return None
    column = match["col"]
    if column not in MEASURES:
        return None
    present = presence_column(column, None)
    if match["filter"] is not None:
        found = _FILTERED.get((column, match["filter"]))
        if found is None:
            return None
        column, present = found
    value = f"(t.{column} * f.factor)" if match["fx"] else f"t.{column}"
    return Part(f"CASE WHEN SUM(t.{present}) > 0 THEN SUM({value}) END", part.empty)


def _conditions(cond: RCond) -> Iterator[str]:
    if isinstance(cond, RBool):
        for item in cond.items:
            yield from _conditions(item)
    elif isinstance(cond, RNot):
        yield from _conditions(cond.item)
    else:
        assert isinstance(cond, (RCompare, RIn, RBetween, RMatch, RNull))
        yield cond.sql


def _columns(plan: Plan, time_dims: list[Column]) -> set[str] | None:
    """The fact columns the plan's dimensions and filters read, or None when one reads
    something else than a column of a row (a subquery over the facts, a time)."""
    texts = [d.sql or "" for d in plan.dims if d not in time_dims]
    if plan.where is not None:
        texts += list(_conditions(plan.where))
    out: set[str] = set()
    for text in texts:
        if "select" in text.lower():
            return None
        for alias, column in _COLUMN.findall(text):
            if alias == "t":
                out.add(column)
            elif alias != "s":  # s: the readable stores (name, zone)
                return None
    if out & {"happened_at", "happened_at_store", "happened_at_account", "store_date"}:
        return None
    return out


def _exact(plan: Plan, rollup: RollupSet, grains: set[str], windows: list[Window]) -> bool:
    # The zones of the stores whose rows the query can read: WHERE store = ... narrows them.
    kept = kept_stores(plan.where)
    stores = {
        plan.stores[s].timezone
        for s in plan.store_ids
        if s in plan.stores and (kept is None or s in kept)
    }
    if rollup.grain == "day":
        return grains <= _DAY_GRAINS and exactness.days_exact(plan.zone_name, stores, windows)
    return grains <= _HOUR_GRAINS and exactness.hours_exact(plan.zone_name, windows)


def _rewritten(plan: Plan, rollup: RollupSet, parts: list[Part]) -> Plan:
    old = plan.local_sql.text
    if rollup.grain == "day":
        local = "CAST(t.store_date AS TIMESTAMP)"
    elif old == "t.happened_at_account":
        # The query's zone is the account's: the hour's start in it, kept at sync, saves
        # converting every row (hours_exact held, so it is every event's hour start).
        local = old
    else:
        local = zone_time_sql(plan.zone_name, "t.happened_at")

    def swap(column: Column) -> Column:
        if column.granularity is None or column.sql is None:
            return column
        return dataclasses.replace(column, sql=column.sql.replace(old, local))

    dims = [swap(d) for d in plan.dims]
    by_id = {id(d): n for d, n in zip(plan.dims, dims, strict=True)}
    columns = [by_id.get(id(c)) or swap(c) for c in plan.columns]
    return dataclasses.replace(
        plan,
        source=Source(rollup.table, "happened_at", events=EVENTS),
        parts=parts,
        dims=dims,
        columns=columns,
        time=swap(plan.time) if plan.time is not None else None,
        local_sql=Sql(local),
        fx_date_sql="t.store_date",
    )
