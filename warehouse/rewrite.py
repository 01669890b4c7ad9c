"""Replace rows by key inside one store's partition, rewriting only the files that hold them.

An incremental sync changes a few recent orders of a large store. Delta's MERGE (in
deltalake 1.x) joins the page against every file of the partition to find the matches: at
1M orders that scan cost ten times the whole change. Here the key column alone is read to
find the files holding a key, only those files are rewritten without the replaced rows,
the new rows are added, and one commit removes the old files and adds the new ones. That is
what MERGE does, minus the full scan; deletion vectors, which would avoid the rewrite, are
not written by deltalake.

Files are written with pyarrow to the local warehouse directory.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from deltalake import CommitProperties, DeltaTable
from deltalake.exceptions import CommitFailedError
from deltalake.transaction import AddAction, RemoveAction

from warehouse.schemas import TableSpec
from warehouse.tables import STORE_COLUMN, TARGET_FILE_SIZE
from warehouse.views import quote_identifier

# Rows per Parquet row group: DuckDB reads row groups in parallel.
ROW_GROUP_ROWS = 122_880


def replace_by_key(
    table: DeltaTable,
    root: Path,
    spec: TableSpec,
    store_id: str,
    key: str,
    keys: pa.Array,
    rows: pa.Table,
    commit_properties: CommitProperties | None = None,
) -> None:
    """In one commit to `table` (whose directory is `root`): remove every row of `store_id`
    whose `key` is in `keys`, and add `rows`.

    `rows` are in `spec.schema` and belong to `store_id`. Upserting parents is the call
    with key "id" and the parents' ids; replacing children uses the parent key column."""
    files = _partition_files(table, store_id)
    value_set = pc.unique(keys.cast(pa.string()))
    touched = _holding(root, files, key, value_set)
    data = rows.drop_columns([STORE_COLUMN])
    kept = [_without(root / f["path"], key, value_set).cast(data.schema) for f in touched]
    merged = pa.concat_tables([*kept, data]) if kept else data
    if not touched and not merged.num_rows:
        return
    now = int(time.time() * 1000)
    written: list[Path] = []
    try:
        adds = [
            _write(root, store_id, chunk, now, written)
            for chunk in _chunks(merged, _rows_per_file(files))
        ]
        removes = [
            RemoveAction(f["path"], True, now, f["size_bytes"], {STORE_COLUMN: store_id})
            for f in touched
        ]
        table.create_write_transaction(
            [*removes, *adds],
            mode="append",
            schema=spec.schema,
            partition_by=[STORE_COLUMN],
            commit_properties=commit_properties,
        )
    except (OSError, pa.ArrowException, CommitFailedError):
        # Files of a commit that surely did not happen would stay on disk until a full
        # vacuum. Any other failure may come after the commit: its files then stay.
        for path in written:
            path.unlink(missing_ok=True)
        raise


def _write(root: Path, store_id: str, chunk: pa.Table, now: int, written: list[Path]) -> AddAction:
    """Write `chunk` as a new file of the store's partition; its add action."""
    relative = f"{STORE_COLUMN}={store_id}/part-00000-{uuid.uuid4()}-c000.snappy.parquet"
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    written.append(path)
    pq.write_table(chunk, path, compression="snappy", row_group_size=ROW_GROUP_ROWS)
    stats = json.dumps(_stats(chunk))
    return AddAction(relative, path.stat().st_size, {STORE_COLUMN: store_id}, now, True, stats)


def _partition_files(table: DeltaTable, store_id: str) -> list[dict[str, Any]]:
    actions = pa.table(table.get_add_actions(flatten=True))
    store = actions[f"partition.{STORE_COLUMN}"]
    mine = actions.filter(pc.equal(store, store_id))
    return mine.select(["path", "size_bytes", "num_records"]).to_pylist()


def _holding(
    root: Path, files: list[dict[str, Any]], key: str, value_set: pa.Array
) -> list[dict[str, Any]]:
    """The files holding any of `value_set` in column `key`. DuckDB reads that one column
    of all files in parallel, the only part of the work that grows with the partition."""
    if not files or not len(value_set):
        return []
    paths = [str(root / f["path"]) for f in files]
    connection = duckdb.connect()
    try:
        connection.register("wanted", pa.table({"value": value_set}))
        found = connection.execute(
            f"SELECT DISTINCT filename FROM read_parquet(?, filename = true)"
            f" WHERE {quote_identifier(key)} IN (SELECT value FROM wanted)",
            [paths],
        ).fetchall()
    finally:
        connection.close()
    hit = {row[0] for row in found}
    return [f for f, path in zip(files, paths, strict=True) if path in hit]


def _without(path: Path, key: str, value_set: pa.Array) -> pa.Table:
    data = pq.read_table(path)
    return data.filter(pc.invert(pc.is_in(data[key], value_set=value_set)))


def _rows_per_file(files: list[dict[str, Any]]) -> int:
    """How many rows make a file of about TARGET_FILE_SIZE, judging by the partition."""
    size = sum(f["size_bytes"] for f in files)
    records = sum(f["num_records"] or 0 for f in files)
    if not size or not records:
        return 100_000
    return max(1_000, int(TARGET_FILE_SIZE / (size / records)))


def _chunks(data: pa.Table, rows_per_file: int) -> Iterator[pa.Table]:
    for start in range(0, max(data.num_rows, 1), rows_per_file):
        chunk = data.slice(start, rows_per_file)
        if chunk.num_rows:
            yield chunk


def _stats(data: pa.Table) -> dict[str, Any]:
    """Delta file statistics: exact min/max for string and integer columns (what merges,
    deletes and readers prune on: ids and keys), null counts for all. Timestamps and
    decimals get no min/max rather than the lossy forms (whole seconds, floats) Delta
    engines write; missing bounds only mean a file is never skipped."""
    minimum: dict[str, Any] = {}
    maximum: dict[str, Any] = {}
    nulls: dict[str, int] = {}
    for field in data.schema:
        column = data[field.name]
        nulls[field.name] = column.null_count
        if column.null_count == len(column):
            continue
        if pa.types.is_string(field.type) or pa.types.is_integer(field.type):
            bounds = pc.min_max(column)
            minimum[field.name] = bounds["min"].as_py()
            maximum[field.name] = bounds["max"].as_py()
    return {
        "numRecords": data.num_rows,
        "minValues": minimum,
        "maxValues": maximum,
        "nullCount": nulls,
    }
