"""Producing a job's file: one warehouse snapshot read through DuckDB, streamed into the
configured format in a folder of the job's own (exports.jobs.execute then puts it in the export
file store, quarry.files).

Rows leave DuckDB in Arrow batches of BATCH_ROWS and go straight to the writer, so memory
stays flat in the row count (DuckDB itself sorts within its memory limit, spilling beyond
it). The file is written under a temporary name and renamed when complete: a download or a
delivery never sees half a file.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from exports.configs.definition import PartSpec, StoredConfig
from exports.configs.naming import EXTENSIONS
from exports.configs.options import FormatOptions
from exports.files.csv_copy import CopySource, copy_csv
from exports.files.csv_writer import CsvWriter
from exports.files.xlsx_writer import MAX_DATA_ROWS, XlsxWriter
from exports.files.zip_writer import ZipWriter
from quarry.files import TEMPORARY_MARK, FileStore, staging_dir
from quarry.settings import Settings
from warehouse.catalog import Dataset, dataset
from warehouse.query import StoreInfo, run_query
from warehouse.reader import WarehouseReader
from warehouse.records import parse_list_params

BATCH_ROWS = 10_000
CONTENT_TYPES = {
    "csv": "text/csv",
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "zip": "application/zip",
}


@dataclass(frozen=True)
class Table:
    """One part of a file: its title row and a stream of value rows. A record part also
    offers the same rows as Arrow `batches` (both views share one lazy stream, so a writer
    consumes one or the other): the CSV writer formats those a column at a time."""

    name: str
    titles: list[str]
    rows: Iterator[Sequence[Any]]
    batches: Iterator[pa.RecordBatch] | None = None
    # A record part can also write itself as a whole CSV file with DuckDB's COPY
    # (exports.files.csv_copy): (options, path) -> rows written, or None to use the writer.
    copy_csv: Callable[[FormatOptions, Path], int | None] | None = None


@dataclass(frozen=True)
class Account:
    """What a query part is run for: the account's currency and zone, the stores read."""

    currency: str
    timezone: str
    stores: Mapping[str, StoreInfo]


@dataclass(frozen=True)
class Produced:
    path: Path
    rows: int
    cut_cells: int


def file_key(job_id: str, file_format: str) -> str:
    """A job's file in the export file store (quarry.files.export_files): under its job
    id, never under the name a person sees."""
    return f"{job_id}/export{EXTENSIONS[file_format]}"


def staging_path(settings: Settings, files: FileStore, key: str) -> Path:
    """Where a run writes the file before it is in the store: in the store's own folder
    when that is local (a rename publishes it), else in this role's home."""
    local = files.local_path(key)
    return local if local is not None else staging_dir(settings) / key


def stream_batches(
    cursor: duckdb.DuckDBPyConnection, sql: str, params: list[Any]
) -> Iterator[pa.RecordBatch]:
    # `execute` streams: DuckDB hands over one batch at a time. `sql(..., params=...)` does
    # not: DuckDB 1.5.5 runs a parameterised relation to completion first, and the whole
    # result sat in memory (the memory test measured 500 MB more for 5x the rows).
    yield from cursor.execute(sql, params).to_arrow_reader(BATCH_ROWS)


def rows_of(batches: Iterator[pa.RecordBatch]) -> Iterator[tuple]:
    for batch in batches:
        yield from zip(*(column.to_pylist() for column in batch.columns), strict=True)


def _record_dataset(part: PartSpec) -> Dataset:
    ds = dataset(part.entity_type)
    assert ds is not None and ds.kind == "records", part.entity_type
    return ds


def _record_source(part: PartSpec, store_ids: Sequence[str]) -> CopySource:
    """A record part as SQL, filtered exactly as GET /v1/{dataset} filters, in the record
    endpoints' order (created_at, then id)."""
    ds = _record_dataset(part)
    query = parse_list_params(ds, [(name, v) for name, values in part.filters.items()
                                   for v in values])  # fmt: skip
    sources = []
    for column in part.columns:
        found = ds.field(column.field)
        assert found is not None, column.field
        sources.append(f'"{found.source}"')
    where = [f'"store_id" IN ({", ".join("?" * len(store_ids))})']
    where += [c.sql for c in query.conditions]
    params: list[Any] = [*store_ids, *(v for c in query.conditions for v in c.params)]
    return CopySource(
        columns=sources,
        from_where=f'FROM "{ds.table}" WHERE {" AND ".join(where)}',
        order_by='"created_at", "id"',
        params=params,
    )


def record_table(
    cursor: duckdb.DuckDBPyConnection, part: PartSpec, store_ids: Sequence[str]
) -> Table:
    """A record part: its columns and rows (_record_source)."""
    titles = [c.title for c in part.columns]
    if not store_ids:
        return Table(part.name, titles, iter(()))
    source = _record_source(part, store_ids)
    batches = stream_batches(cursor, source.select(source.columns), list(source.params))
    return Table(
        part.name, titles, rows_of(batches), batches, partial(copy_csv, cursor, source, titles)
    )


def query_table(
    cursor: duckdb.DuckDBPyConnection, part: PartSpec, account: Account, store_ids: Sequence[str]
) -> Table:
    """A query part: the flat table of the saved query, with its column titles."""
    assert part.query is not None
    result = run_query(
        cursor,
        part.query,
        stores=account.stores,
        account_currency=account.currency,
        account_timezone=account.timezone,
        store_ids=list(store_ids),
    )
    names = [c["name"] for c in result.columns]
    rows = iter([[row.get(n) for n in names] for row in result.rows])
    return Table(part.name, [c["title"] for c in result.columns], rows)


@dataclass(frozen=True)
class PartPreview:
    """What a part would write now: its titles, how many rows, the first few."""

    name: str
    titles: list[str]
    rows: int
    first: list[list[Any]]


def preview(
    reader: WarehouseReader,
    parts: Sequence[PartSpec],
    account: Account,
    store_ids: Sequence[str],
    first: int = 5,
) -> list[PartPreview]:
    """Each part's row count and first `first` rows on the current snapshot, read as a run
    would read them (before any XLSX sheet limit), without writing anything."""
    read: list[PartPreview] = []
    with reader.pinned(store_ids) as snapshot, reader.connect(snapshot) as cursor:
        for part in parts:
            if part.entity_type == "query":
                table = query_table(cursor, part, account, store_ids)
                rows = [list(row) for row in table.rows]
                read.append(PartPreview(part.name, table.titles, len(rows), rows[:first]))
                continue
            titles = [c.title for c in part.columns]
            if not store_ids:
                read.append(PartPreview(part.name, titles, 0, []))
                continue
            source = _record_source(part, store_ids)
            params = list(source.params)
            counted = cursor.execute(f"SELECT count(*) {source.from_where}", params).fetchone()
            head = cursor.execute(f"{source.select(source.columns)} LIMIT {int(first)}", params)
            rows = [list(row) for row in head.fetchall()]
            read.append(PartPreview(part.name, titles, int(counted[0]) if counted else 0, rows))
    return read


def produce(
    reader: WarehouseReader,
    config: StoredConfig,
    account: Account,
    store_ids: Sequence[str],
    target: Path,
    *,
    max_rows_per_sheet: int = MAX_DATA_ROWS,
) -> Produced:
    """Write the configuration's file to `target` from one snapshot of `store_ids`. The
    folder of `target` is the job's own: whatever fails, nothing of the run stays in it."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.name}{TEMPORARY_MARK}run")
    # Record parts read their own tables only; a saved query may read several.
    read_tables = None
    if all(part.entity_type != "query" for part in config.parts):
        read_tables = {_record_dataset(part).table for part in config.parts}
    # The snapshot is pinned for the whole run: maintenance must not expire it under the
    # export, however long it takes.
    with reader.pinned(store_ids) as snapshot, reader.connect(snapshot, read_tables) as cursor:

        def tables() -> Iterator[Table]:
            for part in config.parts:
                if part.entity_type == "query":
                    yield query_table(cursor, part, account, store_ids)
                else:
                    yield record_table(cursor, part, store_ids)

        try:
            rows, cut = write_file(
                config.format, config.options, tables(), partial, max_rows_per_sheet
            )
            os.replace(partial, target)
            # A job's file never changes once written; a local delivery may be a hard link
            # to it (destinations.local), which must not be edited in place either.
            target.chmod(0o444)
        except BaseException:
            # The directory is the job's own: nothing half-written (or a writer's temporary
            # file) stays behind.
            shutil.rmtree(target.parent, ignore_errors=True)
            raise
    return Produced(target, rows, cut)


def write_file(
    file_format: str,
    options: FormatOptions,
    tables: Iterator[Table],
    path: Path,
    max_rows: int,
) -> tuple[int, int]:
    """(rows written, XLSX cells cut) after writing every table to `path`."""
    if file_format == "csv":
        return _csv(path, options, next(tables)), 0
    if file_format == "xlsx":
        workbook = XlsxWriter(path, options, max_rows_per_sheet=max_rows)
        for table in tables:
            workbook.sheet(table.name, table.titles)
            workbook.rows(table.rows)
        workbook.close()
        return workbook.rows_written, workbook.cut_cells
    archive = ZipWriter(path)
    rows = cut = 0
    try:
        for table in tables:
            if options.member_format == "xlsx":
                member = path.with_name(f"{path.name}.member.xlsx")
                try:
                    written, cells = write_file("xlsx", options, iter([table]), member, max_rows)
                    archive.add_file(member, f"{table.name}.xlsx")
                finally:
                    member.unlink(missing_ok=True)
                rows, cut = rows + written, cut + cells
            else:
                with archive.text_member(f"{table.name}.csv") as stream:
                    rows += _csv_table(CsvWriter(stream, options), table)
    finally:
        archive.close()
    return rows, cut


def _csv(path: Path, options: FormatOptions, table: Table) -> int:
    if table.copy_csv is not None:
        rows = table.copy_csv(options, path)
        if rows is not None:
            return rows
    with path.open("w", encoding="utf-8", newline="") as stream:
        return _csv_table(CsvWriter(stream, options), table)


def _csv_table(writer: CsvWriter, table: Table) -> int:
    """Rows written: Arrow batches when the table has them (the vectorised path), else
    the Python rows (query parts, already Python values)."""
    writer.header(table.titles)
    if table.batches is not None:
        writer.batches(table.batches)
    else:
        writer.rows(table.rows)
    return writer.rows_written
