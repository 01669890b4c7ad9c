"""Rollup rows from the sales facts: a store's all at once, or changed by a sync's orders.

Both run on the cursor of the transaction that writes the store's sales rows
(warehouse.modelled.sales.write_sales), so a published snapshot never holds facts
and rollups that disagree; `rebuild` does the same from the facts alone, for maintenance.

An incremental sync neither reads the store's facts again nor its rollup rows: a rollup
row is sums and counts, so a change is appended as signed rows, (the aggregate of the
changed orders' new events) - (that of their old events), one INSERT per set. `orders`
subtracts like the rest: the changed orders' `order` events are counted in their old and
new rows alone. A key may so hold several rows; what they mean together is their sum
(readers sum rows anyway: warehouse.rollups.planner says how a sum of nothing stays null
and a key left without events has no group), and `compact` merges them into one,
which the hourly maintenance does (pipelines.maintenance.rollups). Reading and rewriting
the touched rows inside the sync, as it was done before, cost three lake statements per
set and a quarter of the sync's write steps (docs/benchmark.md, Session 16).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import duckdb

from warehouse.lake import Lake
from warehouse.rollups.definitions import (
    EVENTS,
    ORDERS,
    SETS,
    RollupSet,
    count_columns,
    presence_column,
    stored_measures,
)
from warehouse.schemas import TABLES
from warehouse.tables import duckdb_type, qualified, select_columns, store_predicate

# A UTC hour's start, whatever the session's zone (date_trunc on a TIMESTAMPTZ truncates in
# the session's zone).
_HOUR_US = 3_600_000_000
_HOUR = f"to_timestamp((epoch_us(t.happened_at) // {_HOUR_US}) * 3600)"
_STORE_DATE = "CAST(t.happened_at_store AS DATE)"


def _type(rollup: RollupSet, column: str) -> str:
    return duckdb_type(TABLES[rollup.table].schema.field(column).type)


def aggregate_sql(rollup: RollupSet, source: str, *, signed: bool = False) -> str:
    """The rollup rows of the fact rows in relation `source` (SALES's columns).

    `signed`: each row of `source` also has `quarry_sign` (1 or -1), and the rows are its
    rows' signed sums, those of keys whose figures do not move left out: the difference
    a change makes, in one pass over its old (-1) and new (1) events."""
    keys = [
        "t.store_id AS store_id",
        "t.currency AS currency",
        *([f"{_HOUR} AS happened_at"] if rollup.grain == "hour" else []),
        f"{_STORE_DATE} AS store_date",
        *(f"t.{d} AS {d}" for d in rollup.dims),
    ]
    select = list(keys)
    if rollup.grain == "day":
        select.append("min(t.happened_at) AS happened_at")
    else:
        # The hour's start in the account's zone: an event's local time less its time into
        # the hour (exact when the zone's hours start on UTC hours).
        # In microseconds: TIMESTAMP - INTERVAL arithmetic per event cost 0.8 s of a
        # 1M-event store's 1.1 s hour rollup (docs/benchmark.md, Session 13).
        select.append(
            "make_timestamp(min(epoch_us(t.happened_at_account)"
            f" - epoch_us(t.happened_at) % {_HOUR_US})) AS happened_at_account"
        )
    counts = [ORDERS]
    for name, column, flt in count_columns():
        conditions = ([f"t.{column} IS NOT NULL"] if column else []) + ([flt.sql] if flt else [])
        where = f" FILTER (WHERE {' AND '.join(conditions)})" if conditions else ""
        if signed:
            select.append(f"CAST(coalesce(sum(t.quarry_sign){where}, 0) AS BIGINT) AS {name}")
        else:
            select.append(f"count(*){where} AS {name}")
        counts.append(name)
    order = "count(DISTINCT t.order_id) FILTER (WHERE t.event_type = 'order'{})"
    if signed:
        select.append(
            f"{order.format(' AND t.quarry_sign = 1')} - {order.format(' AND t.quarry_sign = -1')}"
            f" AS {ORDERS}"
        )
    else:
        select.append(f"{order.format('')} AS {ORDERS}")
    sums = []
    for name, column, flt in stored_measures():
        where = f" FILTER (WHERE {flt.sql})" if flt is not None else ""
        value = f"t.{column} * t.quarry_sign" if signed else f"t.{column}"
        select.append(f"CAST(sum({value}){where} AS {_type(rollup, name)}) AS {name}")
        sums.append(name)
    groups = ", ".join(str(k + 1) for k in range(len(keys)))
    sql = f"SELECT {', '.join(select)} FROM {source} t GROUP BY {groups}"
    if not signed:
        return sql
    moved = [f"{c} <> 0" for c in counts] + [f"coalesce({m}, 0) <> 0" for m in sums]
    return f"SELECT * FROM ({sql}) WHERE {' OR '.join(moved)}"


def _insert(cursor: duckdb.DuckDBPyConnection, rollup: RollupSet, select: str) -> None:
    # DuckLake writes the rows in the table's sort order (warehouse.tables.sort_key).
    columns = select_columns(rollup.table)
    cursor.execute(
        f"INSERT INTO {qualified(rollup.table)} ({columns}) SELECT {columns} FROM ({select})"
    )


def write_store(cursor: duckdb.DuckDBPyConnection, store_id: str | Sequence[str]) -> None:
    """Replace every rollup row of the store (or stores) with those of its facts as
    `cursor` sees them (inside the sales transaction: the rows it just wrote)."""
    facts = f"(SELECT * FROM {qualified('sales')} WHERE {store_predicate(store_id)})"
    for rollup in SETS:
        cursor.execute(f"DELETE FROM {qualified(rollup.table)} WHERE {store_predicate(store_id)}")
        _insert(cursor, rollup, aggregate_sql(rollup, facts))


def fill(cursor: duckdb.DuckDBPyConnection, tables: Iterable[str]) -> None:
    """Fill the (new, empty) rollup `tables` from every store's facts."""
    facts = qualified("sales")
    for rollup in SETS:
        if rollup.table in tables:
            _insert(cursor, rollup, aggregate_sql(rollup, facts))


def apply_change(cursor: duckdb.DuckDBPyConnection, old_events: str, new_events: str) -> None:
    """Bring the rollups from `old_events` (the changed orders' fact rows before the
    change, a relation on the cursor) to `new_events` (their rows after it), by appending
    the difference."""
    signed = (
        f"(SELECT *, -1 AS quarry_sign FROM {old_events} "
        f"UNION ALL BY NAME SELECT *, 1 AS quarry_sign FROM {new_events})"
    )
    for rollup in SETS:
        # Netted per key: an order whose events stay in their key with the same figures
        # adds nothing, and a row of zeros is not written.
        _insert(cursor, rollup, aggregate_sql(rollup, signed, signed=True))


def _merge_sql(rollup: RollupSet, signed: str) -> str:
    """The rows of `signed` (rollup rows with a quarry_sign) of the same key summed, each
    count and sum times its row's sign; a key left without events goes, a sum left
    without its events is null again."""
    select = list(rollup.keys)
    # Any event's instant serves (the planner reads a day's only to filter whole days, an
    # hour's start in the account zone only where it is the same for every event).
    select += [f"min({column}) AS {column}" for column in rollup.instants]
    for name in [name for name, _, _ in count_columns()] + [ORDERS]:
        select.append(f"CAST(sum({name} * quarry_sign) AS BIGINT) AS {name}")
    for name, column, flt in stored_measures():
        present = presence_column(column, flt)
        select.append(
            f"CASE WHEN sum({present} * quarry_sign) > 0 THEN "
            f"CAST(sum({name} * quarry_sign) AS {_type(rollup, name)}) END AS {name}"
        )
    groups = ", ".join(str(k + 1) for k in range(len(rollup.keys)))
    return (
        f"SELECT {', '.join(select)} FROM ({signed}) GROUP BY {groups} "
        f"HAVING sum({EVENTS} * quarry_sign) > 0"
    )


_KEYS, _MERGED = "quarry_rollup_keys", "quarry_rollup_merged"


def compact(cursor: duckdb.DuckDBPyConnection, store_id: str | Sequence[str]) -> None:
    """Merge the rows of every key of the store (or stores) held by several into one
    (what they mean together is unchanged); keys held by one row are left alone."""
    mine = store_predicate(store_id, "r")
    for rollup in SETS:
        table = qualified(rollup.table)
        keys = ", ".join(rollup.keys)
        match = " AND ".join(f"k.{c} IS NOT DISTINCT FROM r.{c}" for c in rollup.keys)
        several = f"EXISTS (SELECT 1 FROM {_KEYS} k WHERE {match})"
        try:
            cursor.execute(
                f"CREATE OR REPLACE TEMP TABLE {_KEYS} AS SELECT {keys} FROM {table} r "
                f"WHERE {mine} GROUP BY ALL HAVING count(*) > 1"
            )
            cursor.execute(
                f"CREATE OR REPLACE TEMP TABLE {_MERGED} AS "
                + _merge_sql(
                    rollup, f"SELECT *, 1 AS quarry_sign FROM {table} r WHERE {mine} AND {several}"
                )
            )
            cursor.execute(f"DELETE FROM {table} r WHERE {mine} AND {several}")
            _insert(cursor, rollup, f"SELECT * FROM {_MERGED}")
        finally:
            for name in (_KEYS, _MERGED):
                cursor.execute(f"DROP TABLE IF EXISTS {name}")


def stores_to_compact(lake: Lake) -> list[str]:
    """The stores with a key of some rollup set held by more than one row."""
    cursor = lake.cursor()
    try:
        found: set[str] = set()
        for rollup in SETS:
            keys = ", ".join(rollup.keys)
            found.update(
                row[0]
                for row in cursor.execute(
                    f"SELECT DISTINCT store_id FROM (SELECT store_id FROM "
                    f"{qualified(rollup.table)} GROUP BY {keys} HAVING count(*) > 1)"
                ).fetchall()
            )
        return sorted(found)
    finally:
        cursor.close()


def stores_to_rebuild(lake: Lake) -> list[str]:
    """Every store with sales facts or rollup rows in the lake's newest snapshot."""
    cursor = lake.cursor()
    try:
        union = " UNION ".join(
            f"SELECT DISTINCT store_id FROM {qualified(name)}"
            for name in ("sales", *(r.table for r in SETS))
        )
        return sorted(row[0] for row in cursor.execute(union).fetchall())
    finally:
        cursor.close()


def rebuild(lake: Lake, store_ids: Iterable[str] | None = None) -> list[str]:
    """Rebuild the rollups of `store_ids` (every store with facts or rollups when None)
    from the sales facts, one transaction per store; returns the stores rebuilt. Readers
    see them once the store's next snapshot is published (pipelines.maintenance.rollups
    publishes where that is safe)."""
    done = []
    for store_id in stores_to_rebuild(lake) if store_ids is None else store_ids:
        rebuild_store(lake, store_id)
        done.append(store_id)
    return done


def rebuild_store(lake: Lake, store_id: str) -> None:
    """One store's rollups from its sales facts, in one transaction (its own snapshot)."""
    with lake.transaction(author=store_id, message="rollups") as cursor:
        write_store(cursor, store_id)
