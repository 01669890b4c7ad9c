"""The rows of a record part that changed between two snapshots of each store, as SQL.

For a store with a start snapshot, the rows DuckLake's change feed names between the start
and the end (`lake.table_changes`, bounds inclusive; starting at the start snapshot itself
keeps working when snapshots in between have expired) are looked up at both ends by time
travel (by row id), each side through the configuration's filters, and matched by key:

- present only at the end: `insert`; only at the start: `delete` (with its values at the
  start, so the row says what went); at both with different exported values: `update`;
  at both and equal: nothing.

The feed's own change_type is not used: Quarry's writers delete and re-insert, a rewrite of
data files reports unchanged rows as update pairs, and once snapshots in between expire a
delete can be reported after the insert that replaced it; comparing the two ends is exact
whatever the feed says. A row that leaves the filters is a delete, one that enters them an
insert. A store without a start (a first run, a reset, a start past its retention) gives
every row that passes the filters, as `insert`.

Every row carries `_change` and `_snapshot` (the store's snapshot the run read: the end).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import duckdb

from exports.files.csv_copy import CopySource
from warehouse.lake import LAKE
from warehouse.record_filters import Condition
from warehouse.tables import qualified, quote_literal, store_literal

CHANGE_COLUMN = "_change"
SNAPSHOT_COLUMN = "_snapshot"
KINDS = ("insert", "update", "delete")


@dataclass(frozen=True)
class StoreRange:
    """What one store's rows are read between: `start` None means from the beginning."""

    start: int | None
    end: int


def _filtered(conditions: Sequence[Condition]) -> str:
    return "".join(f" AND {c.inline()}" for c in conditions)


def changes_source(
    table: str,
    columns: Sequence[str],
    conditions: Sequence[Condition],
    ranges: Mapping[str, StoreRange],
) -> CopySource:
    """The changed rows of `table` (its `columns`, SQL expressions over it, then `_change`
    and `_snapshot`) for each store of `ranges`, in the record endpoints' order.

    Stores are read in groups that share a range (after one sync of every store, all of
    them): each group's change feed (`table_changes` over its range) names the rows
    (`rowid`) inserted or deleted in the range, with their values: a row present at either
    end under a key the feed names was itself inserted or deleted in the range (keys are
    unique per store), so it is among the entries. Which of them each end holds is read by
    time travel of the row ids alone (a narrow scan); their values come from the feed, as a
    row's values never change under its row id (Quarry writes by delete and insert, never
    UPDATE, and maintenance's rewrites keep values). One group binds the table at each of
    its two versions once, whatever its number of stores (binding a version asks the lake's
    catalog for its files: a statement per store took 0.86 s for five stores at 1M orders);
    stores with different ranges keep feeds of their own, so a store synced long ago does
    not make the others read its range."""
    name = qualified(table)
    picked = ", ".join(f'{expr} AS "c{i}"' for i, expr in enumerate(columns))
    outputs = [f'"c{i}"' for i in range(len(columns))]
    where = _filtered(conditions)
    groups: dict[tuple[int | None, int], list[str]] = {}
    for store, span in sorted(ranges.items()):
        groups.setdefault((span.start, int(span.end)), []).append(store)
    ctes: list[str] = []
    selects: list[str] = []
    for n, ((first, end), stores) in enumerate(sorted(groups.items(), key=_group_order)):
        store_sql = f'"store_id" IN ({", ".join(store_literal(s) for s in stores)})'

        def side(version: int, rows: str | None, store_sql: str = store_sql) -> str:
            travelled = f"{name} AT (VERSION => {int(version)})"
            if rows is None:
                source, kept = travelled, store_sql
            else:
                # Row ids are unique in the table and the feed's are the group's stores'
                # already: the scan reads no column, only the ids of the files' rows.
                held = (
                    f'SELECT "rowid" FROM {travelled} WHERE "rowid" IN (SELECT "rowid" FROM {rows})'
                )
                source, kept = rows, f'"rowid" IN ({held})'
            return (
                f'SELECT "store_id" AS "__store", "id" AS "__key", "created_at" AS "__created", '
                f"{picked} FROM {source} WHERE {kept}{where}"
            )

        if first is None:
            ctes.append(f"full{n} AS ({side(end, None)})")
            selects.append(
                f'SELECT "__created", "__key", {", ".join(outputs)}, '
                f'\'insert\' AS "{CHANGE_COLUMN}", {end}::BIGINT AS "{SNAPSHOT_COLUMN}" '
                f"FROM full{n}"
            )
            continue
        if first >= end:
            continue  # nothing can have changed
        feed = f"{LAKE}.table_changes({quote_literal(table)}, {int(first)}, {end})"
        # The feed's own bounds are the range: no filter on its snapshot_id, which DuckLake
        # (1.5.5) pushes into the delete files' scan before each row's snapshot is known,
        # dropping the deletes of rows whose data file predates the filter's lower bound
        # (duckdb/ducklake pull request 1369): at 1M orders, 7,219 of 8,090 such rows lost.
        ctes.append(
            f'rows{n} AS MATERIALIZED (SELECT * EXCLUDE ("snapshot_id", "change_type") '
            f"FROM {feed} WHERE {store_sql} "
            'QUALIFY row_number() OVER (PARTITION BY "rowid") = 1)'
        )
        ctes.append(f"start{n} AS MATERIALIZED ({side(first, f'rows{n}')})")
        ctes.append(f"end{n} AS MATERIALIZED ({side(end, f'rows{n}')})")
        same_key = 's."__store" = e."__store" AND s."__key" = e."__key"'
        differs = " OR ".join(f's."c{i}" IS DISTINCT FROM e."c{i}"' for i in range(len(columns)))
        kept = ", ".join(f'e."c{i}"' for i in range(len(columns)))
        gone = ", ".join(f's."c{i}"' for i in range(len(columns)))
        selects.append(
            f'SELECT e."__created", e."__key", {kept}, '
            f"CASE WHEN s.\"__key\" IS NULL THEN 'insert' ELSE 'update' END "
            f'AS "{CHANGE_COLUMN}", '
            f'{end}::BIGINT AS "{SNAPSHOT_COLUMN}" '
            f"FROM end{n} AS e LEFT JOIN start{n} AS s ON {same_key} "
            f'WHERE s."__key" IS NULL OR {differs or "false"}'
        )
        selects.append(
            f'SELECT s."__created", s."__key", {gone}, '
            f'\'delete\' AS "{CHANGE_COLUMN}", {end}::BIGINT AS "{SNAPSHOT_COLUMN}" '
            f"FROM start{n} AS s ANTI JOIN end{n} AS e ON {same_key}"
        )
    if not selects:
        body = (
            f'SELECT "created_at" AS "__created", "id" AS "__key", {picked}, '
            f'\'insert\' AS "{CHANGE_COLUMN}", 0::BIGINT AS "{SNAPSHOT_COLUMN}" '
            f"FROM {name} WHERE false"
        )
    else:
        body = (f"WITH {', '.join(ctes)} " if ctes else "") + " UNION ALL ".join(selects)
    return CopySource(
        columns=[*outputs, f'"{CHANGE_COLUMN}"', f'"{SNAPSHOT_COLUMN}"'],
        from_where=f"FROM ({body}) AS changes",
        order_by='"__created", "__key"',
    )


def _group_order(item: tuple[tuple[int | None, int], list[str]]) -> tuple[int, int, str]:
    (first, end), stores = item
    return (-1 if first is None else first, end, stores[0])


def materialized(cursor: duckdb.DuckDBPyConnection, source: CopySource) -> CopySource:
    """`source`'s rows computed once into a temporary table of `cursor`'s connection, and
    the same part read from there: the manifest's counts and the file then read the change
    once rather than each running the feed and the time travel again. Only for a source
    bounded by a change (every store with a start): a first run's rows are the whole
    table."""
    temporary = f"quarry_changes_{uuid.uuid4().hex[:12]}"
    cursor.execute(f"CREATE TEMP TABLE {temporary} AS SELECT * {source.from_where}")
    return replace(source, from_where=f"FROM {temporary}")


def change_counts(cursor: duckdb.DuckDBPyConnection, source: CopySource) -> dict[str, int]:
    """How many rows of each kind of change `source` holds (every kind named)."""
    rows = cursor.execute(
        f'SELECT "{CHANGE_COLUMN}", count(*) {source.from_where} GROUP BY 1'
    ).fetchall()
    counts = dict.fromkeys(KINDS, 0)
    counts.update({str(kind): int(count) for kind, count in rows})
    return counts
