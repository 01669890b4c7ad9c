"""Replace rows by key inside one store's partition, rewriting only the files that hold them.

An incremental sync changes a few recent orders of a large store. Delta's MERGE (in
deltalake 1.x) joins the page against every file of the partition to find the matches: at
1M orders that scan cost ten times the whole change. Here the key column alone is read to
find the files holding a key, only those files are rewritten without the replaced rows,
the new rows are added, and one commit removes the old files and adds the new ones. That is
what MERGE does, minus the full scan; deletion vectors, which would avoid the rewrite, are
not written by deltalake.

Files are kept clustered (warehouse.tables.clustering_key): compaction writes its rows
sorted, in files of about TARGET_FILE_SIZE, so each file covers one narrow range of the key
and a change of recent records touches the newest files only. The key column's min/max in
each file's Delta statistics then rule out most files before any is opened. A replace
rewrites each file it touches on its own, keeping that file's order and range, and writes
the new rows sorted into files of their own: re-sorting the touched files together cost
more than reading and writing them (a change spread over a store's history touches every
file), and compaction folds the new rows' small files in later.

Files are written with pyarrow to the local warehouse directory.
"""

from __future__ import annotations

import bisect
import json
import math
import os
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import partial
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
from warehouse.tables import STORE_COLUMN, TARGET_FILE_SIZE, clustering_key
from warehouse.views import quote_identifier

# Rows per Parquet row group: DuckDB reads row groups in parallel.
ROW_GROUP_ROWS = 122_880

# Parquet writers may truncate long string statistics; a bound this long is not trusted to
# be exact, so its file is never skipped on it.
MAX_TRUSTED_BOUND_CHARS = 64

# Compaction merges only files under this size: rewrites and compactions write files of at
# least about half the target (balanced chunks), so those are left alone and a compaction
# after an incremental sync reads only the sync's few small files.
SMALL_FILE_BYTES = TARGET_FILE_SIZE // 4


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
    files = _partition_files(table, store_id, key)
    value_set = pc.unique(keys.cast(pa.string()))
    touched = _holding(root, _may_hold(files, key, value_set), key, value_set)
    data = rows.drop_columns([STORE_COLUMN])
    if not touched and not data.num_rows:
        return
    now = int(time.time() * 1000)
    written: list[Path] = []
    try:
        # Reading, filtering and writing Parquet release the GIL: files go in parallel.
        rewrite = partial(_rewrite_without, root, store_id, key, value_set, data.schema, now,
                          written)  # fmt: skip
        with ThreadPoolExecutor(max_workers=_workers(len(touched))) as pool:
            kept = list(pool.map(rewrite, touched))
        new = sort_clustered(data, spec.name)
        adds = [add for add in kept if add is not None]
        adds += [_write(root, store_id, chunk, now, written)
                 for chunk in _chunks(new, _rows_per_file(files))]  # fmt: skip
        removes = _removals(touched, store_id, now, data_change=True)
        _commit(table, spec, [*removes, *adds], commit_properties)
    except (OSError, pa.ArrowException, CommitFailedError):
        # Files of a commit that surely did not happen would stay on disk until a full
        # vacuum. Any other failure may come after the commit: its files then stay.
        for path in written:
            path.unlink(missing_ok=True)
        raise


def write_partition(
    table: DeltaTable,
    root: Path,
    spec: TableSpec,
    store_id: str,
    rows: pa.Table,
    *,
    replace: bool,
    commit_properties: CommitProperties | None = None,
) -> None:
    """In one commit to `table`: add `rows` (in `spec.schema`, of `store_id`) as new files
    in clustering order, after removing every file of the store's partition when `replace`
    (a full sync's first page). The files are written in parallel, where deltalake's
    writer encoded one file after another."""
    files = _partition_files(table, store_id, None)
    if not rows.num_rows and not (replace and files):
        return
    data = sort_clustered(rows.drop_columns([STORE_COLUMN]), spec.name)
    chunks = list(_chunks(data, _rows_per_file(files)))
    now = int(time.time() * 1000)
    written: list[Path] = []
    try:
        write = partial(_write, root, store_id, now=now, written=written)
        with ThreadPoolExecutor(max_workers=_workers(len(chunks))) as pool:
            adds = list(pool.map(write, chunks))
        removes = _removals(files, store_id, now, data_change=True) if replace else []
        _commit(table, spec, [*removes, *adds], commit_properties)
    except (OSError, pa.ArrowException, CommitFailedError):
        # As in replace_by_key: only files of a commit that surely failed are removed.
        for path in written:
            path.unlink(missing_ok=True)
        raise


def _workers(tasks: int) -> int:
    """Threads for `tasks` independent file reads and writes (they release the GIL)."""
    return max(1, min(tasks, os.cpu_count() or 1))


def _rewrite_without(
    root: Path,
    store_id: str,
    key: str,
    value_set: pa.Array,
    schema: pa.Schema,
    now: int,
    written: list[Path],
    file: dict[str, Any],
) -> AddAction | None:
    """`file` written again without the rows whose `key` is in `value_set`, in its own
    order; None when no row is left."""
    kept = _without(root / file["path"], key, value_set).cast(schema)
    if not kept.num_rows:
        return None
    return _write(root, store_id, kept, now, written)


def compact_partition(
    table: DeltaTable,
    root: Path,
    spec: TableSpec,
    store_id: str,
    commit_properties: CommitProperties | None = None,
) -> tuple[int, int]:
    """Merge the small files of `store_id`'s partition into clustered files of about
    TARGET_FILE_SIZE, in one commit; returns (files removed, files added).

    After a full sync every file is a small page, so the whole partition comes out sorted;
    after an incremental one only its few new files are read. Delta's own compaction
    bin-packs files in no particular order, which gave every file rows of all ages."""
    files = _partition_files(table, store_id, None)
    small = [f for f in files if f["size_bytes"] < SMALL_FILE_BYTES]
    if len(small) < 2:
        return 0, 0
    data_schema = spec.schema.remove(spec.schema.get_field_index(STORE_COLUMN))
    total = sum(f["num_records"] or 0 for f in small)
    per_file = _balanced(total, _rows_per_file(files))
    columns = ", ".join(quote_identifier(name) for name in data_schema.names)
    now = int(time.time() * 1000)
    written: list[Path] = []
    connection = duckdb.connect()
    try:
        # DuckDB sorts out of core, so a full sync of a large store is not held in memory
        # at once; the files are streamed out in slices of one output file each.
        reader = connection.sql(
            f"SELECT {columns} FROM read_parquet($paths, hive_partitioning = false,"
            f" union_by_name = true) ORDER BY {clustered_order_by(spec)}",
            params={"paths": [str(root / f["path"]) for f in small]},
        ).to_arrow_reader(ROW_GROUP_ROWS)
        adds: list[AddAction] = []
        pending = data_schema.empty_table()
        for batch in reader:
            pending = pa.concat_tables([pending, pa.Table.from_batches([batch]).cast(data_schema)])
            while pending.num_rows >= per_file:
                chunk = pending.slice(0, per_file)
                adds.append(_write(root, store_id, chunk, now, written, False))
                pending = pending.slice(per_file)
        if pending.num_rows:
            adds.append(_write(root, store_id, pending, now, written, False))
        removes = _removals(small, store_id, now, data_change=False)
        _commit(table, spec, [*removes, *adds], commit_properties)
    except (OSError, pa.ArrowException, duckdb.Error, CommitFailedError):
        # As in replace_by_key: only files of a commit that surely failed are removed.
        for path in written:
            path.unlink(missing_ok=True)
        raise
    finally:
        connection.close()
    return len(removes), len(adds)


def _removals(
    files: list[dict[str, Any]], store_id: str, now: int, *, data_change: bool
) -> list[RemoveAction]:
    return [
        RemoveAction(f["path"], data_change, now, f["size_bytes"], {STORE_COLUMN: store_id})
        for f in files
    ]


def _commit(
    table: DeltaTable,
    spec: TableSpec,
    actions: list[Any],
    commit_properties: CommitProperties | None,
) -> None:
    """One Delta commit of removals and additions: readers see all of it or none."""
    table.create_write_transaction(
        actions,
        mode="append",
        schema=spec.schema,
        partition_by=[STORE_COLUMN],
        commit_properties=commit_properties,
    )


def sort_clustered(data: pa.Table, name: str) -> pa.Table:
    """`data` (rows of table `name`) in clustering order. String keys (ids) go by length,
    then value: platform ids are a fixed prefix and a growing number, so this is their
    numeric order, which follows creation time, where plain string order puts o10 before
    o9."""
    if data.num_rows < 2:
        return data
    sort_keys: list[tuple[str, str, str]] = []
    helpers: list[str] = []
    for column in clustering_key(name):
        if column not in data.column_names:
            continue
        if pa.types.is_string(data.schema.field(column).type):
            helper = f"__length_{column}"
            data = data.append_column(helper, pc.utf8_length(data[column]))
            helpers.append(helper)
            sort_keys.append((helper, "ascending", "at_end"))
        sort_keys.append((column, "ascending", "at_end"))
    if not sort_keys or _in_order(data, [column for column, _, _ in sort_keys]):
        # Rows a query already sorted (the sales model's) skip the take, which copies
        # every column and cost more than the sort itself.
        return data.drop_columns(helpers)
    order = pc.sort_indices(data, options=pc.SortOptions(sort_keys))
    return data.take(order).drop_columns(helpers)


def _in_order(data: pa.Table, columns: list[str]) -> bool:
    """Whether each row of `data` sorts at or after the one before it by `columns`
    (ascending); a null anywhere in them answers False."""
    rows = data.num_rows
    in_order: pa.ChunkedArray | None = None
    for column in reversed(columns):
        before, after = data[column].slice(0, rows - 1), data[column].slice(1)
        if in_order is None:
            in_order = pc.less_equal(before, after)
        else:
            tied = pc.and_(pc.equal(before, after), in_order)
            in_order = pc.or_(pc.less(before, after), tied)
    return in_order is None or bool(pc.all(pc.fill_null(in_order, False)).as_py())


def clustered_order_by(spec: TableSpec) -> str:
    """sort_clustered's order as a DuckDB ORDER BY list."""
    terms: list[str] = []
    for column in clustering_key(spec.name):
        quoted = quote_identifier(column)
        if pa.types.is_string(spec.schema.field(column).type):
            terms.append(f"length({quoted}) NULLS LAST")
        terms.append(f"{quoted} NULLS LAST")
    return ", ".join(terms)


def _write(
    root: Path,
    store_id: str,
    chunk: pa.Table,
    now: int,
    written: list[Path],
    data_change: bool = True,
) -> AddAction:
    """Write `chunk` as a new file of the store's partition; its add action."""
    relative = f"{STORE_COLUMN}={store_id}/part-00000-{uuid.uuid4()}-c000.snappy.parquet"
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    written.append(path)
    pq.write_table(chunk, path, compression="snappy", row_group_size=ROW_GROUP_ROWS)
    stats = json.dumps(_stats(chunk))
    size = path.stat().st_size
    return AddAction(relative, size, {STORE_COLUMN: store_id}, now, data_change, stats)


def _partition_files(table: DeltaTable, store_id: str, key: str | None) -> list[dict[str, Any]]:
    """The add actions of the store's partition: path, size, rows and, with `key`, the
    key column's bounds as "min"/"max" (None where the file has no statistics)."""
    actions = pa.table(table.get_add_actions(flatten=True))
    store = actions[f"partition.{STORE_COLUMN}"]
    mine = actions.filter(pc.equal(store, store_id))
    files = mine.select(["path", "size_bytes", "num_records"]).to_pylist()
    if key is not None:
        for bound in ("min", "max"):
            column = f"{bound}.{key}"
            values = mine[column].to_pylist() if column in mine.column_names else None
            for i, f in enumerate(files):
                f[bound] = values[i] if values is not None else None
    return files


def _may_hold(files: list[dict[str, Any]], key: str, value_set: pa.Array) -> list[dict[str, Any]]:
    """The files whose statistics do not rule out holding one of `value_set` in `key`:
    a file is skipped only when no wanted value lies between its exact min and max."""
    wanted = sorted(v for v in value_set.to_pylist() if v is not None)
    candidates: list[dict[str, Any]] = []
    for f in files:
        low, high = f.get("min"), f.get("max")
        if not _trusted(low) or not _trusted(high):
            candidates.append(f)
            continue
        # Python compares str by code point, which is UTF-8 byte order as in Parquet.
        first = bisect.bisect_left(wanted, low)
        if first < len(wanted) and wanted[first] <= high:
            candidates.append(f)
    return candidates


def _trusted(bound: Any) -> bool:
    return isinstance(bound, str) and len(bound) < MAX_TRUSTED_BOUND_CHARS


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


def _balanced(rows: int, rows_per_file: int) -> int:
    """Rows per file that split `rows` into equal files of at most `rows_per_file`: no
    small remainder file, which the next compaction would have to fold in again."""
    files = max(1, math.ceil(rows / rows_per_file))
    return max(1, math.ceil(rows / files))


def _chunks(data: pa.Table, rows_per_file: int) -> Iterator[pa.Table]:
    per_file = _balanced(data.num_rows, rows_per_file)
    for start in range(0, max(data.num_rows, 1), per_file):
        chunk = data.slice(start, per_file)
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
