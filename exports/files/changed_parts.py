"""The record parts of a changed-rows configuration: per store, the range a run reads
(from its start snapshot, when the lake still holds it, to the snapshot read now), and each
part's changed rows as a table to write (exports.files.changes builds the SQL)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from functools import partial

import duckdb

from exports.configs.definition import PartSpec
from exports.files.changes import (
    CHANGE_COLUMN,
    SNAPSHOT_COLUMN,
    StoreRange,
    change_counts,
    changes_source,
    materialized,
)
from exports.files.csv_copy import copy_csv
from exports.files.manifest import StoreRead
from exports.files.record_parts import column_names, record_dataset, rows_of, stream_batches
from exports.files.tables import SqlPart, Table
from warehouse.lake import LAKE
from warehouse.reader import unchanged_until
from warehouse.records import parse_list_params

logger = logging.getLogger(__name__)


def changed_table(
    cursor: duckdb.DuckDBPyConnection, part: PartSpec, ranges: Mapping[str, StoreRange]
) -> tuple[Table, dict[str, int]]:
    """A record part of a changed-rows configuration (exports.files.changes): its columns
    then `_change` and `_snapshot`; and how many rows of each kind it holds."""
    ds = record_dataset(part)
    query = parse_list_params(ds, [(name, v) for name, values in part.filters.items()
                                   for v in values])  # fmt: skip
    columns = []
    for column in part.columns:
        found = ds.field(column.field)
        assert found is not None, column.field
        columns.append(f'"{found.source}"')
    source = changes_source(ds.table, columns, query.conditions, ranges)
    if all(span.start is not None for span in ranges.values()):
        source = materialized(cursor, source)
    titles = [c.title for c in part.columns] + [CHANGE_COLUMN, SNAPSHOT_COLUMN]
    names = [*column_names(part), CHANGE_COLUMN, SNAPSHOT_COLUMN]
    counts = change_counts(cursor, source)
    batches = stream_batches(cursor, source.select(source.columns))
    table = Table(
        part.name,
        titles,
        rows_of(batches),
        batches,
        partial(copy_csv, cursor, source, titles),
        sql=SqlPart(cursor, source),
        names=names,
    )
    return table, counts


def change_ranges(
    cursor: duckdb.DuckDBPyConnection,
    ends: Mapping[str, int],
    starts: Mapping[str, int],
    restarted: Mapping[str, str],
) -> tuple[dict[str, StoreRange], list[StoreRead]]:
    """Per store read, the range of a changed-rows run: from its start (when it has one
    whose snapshot the lake still holds), moved up to the store's last version with the
    same rows (warehouse.reader.unchanged_until), to the snapshot read now. The reads
    (the manifest's) keep the start itself. The caller keeps the moved starts from
    expiry (they are not pinned as the starts are)."""
    wanted = sorted({v for s, v in starts.items() if s in ends})
    held: set[int] = set()
    if wanted:
        listed = ", ".join(str(int(v)) for v in wanted)
        held = {
            int(v)
            for (v,) in cursor.execute(
                f"SELECT snapshot_id FROM {LAKE}.snapshots() WHERE snapshot_id IN ({listed})"
            ).fetchall()
        }
    ranges: dict[str, StoreRange] = {}
    reads: list[StoreRead] = []
    for store, end in sorted(ends.items()):
        start = starts.get(store)
        reason = restarted.get(store)
        lost = reason is not None  # a start let go: the run starts over unasked
        if start is not None and start not in held:
            lost = True
            reason = f"its start snapshot {start} is no longer in the lake"
            logger.warning(
                "changed-rows export, store %s: %s; every row is delivered", store, reason
            )
            start = None
        elif start is None and reason is None:
            reason = "no completed run yet (or reset): every row"
        ranges[store] = StoreRange(start, int(end))
        reads.append(StoreRead(store, int(end), start, reason, lost))
    # A store's rows are those of its start until its own next write: its feed starts
    # there, not reading the other stores' writes in between (after a full sync of each
    # store in turn, a store's range held every later store's whole sync: at 10M orders the
    # job took 3.05 s against 0.66 s for ranges that held only the change).
    quiet = unchanged_until(
        cursor, {s: (r.start, r.end) for s, r in ranges.items() if r.start is not None}
    )
    for store, version in quiet.items():
        ranges[store] = StoreRange(version, ranges[store].end)
    return ranges, reads
