"""Producing a job's file: one warehouse snapshot read through DuckDB, streamed into the
configured format in a folder of the job's own (exports.jobs.execute then puts it in the export
file store, quarry.files).

Rows leave DuckDB in Arrow batches (exports.files.record_parts) and go straight to the
writer, so memory stays flat in the row count (DuckDB itself sorts within its memory
limit, spilling beyond it). The file is written under a temporary name and renamed when
complete: a download or a delivery never sees half a file.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

import duckdb

from exports.configs.definition import PartSpec, StoredConfig
from exports.files.changed_parts import change_ranges, changed_table
from exports.files.changes import (
    CHANGE_COLUMN,
    SNAPSHOT_COLUMN,
    StoreRange,
)
from exports.files.csv_copy import copy_csv
from exports.files.formats import EXTENSIONS, write_file
from exports.files.manifest import FileSummary, PartSummary, StoreRead, add_to_zip
from exports.files.record_parts import (
    column_names,
    columns_of,
    record_dataset,
    record_schema,
    record_source,
    rows_of,
    stream_batches,
)
from exports.files.tables import SqlPart, Table
from exports.files.xlsx_writer import MAX_DATA_ROWS
from quarry.files import TEMPORARY_MARK, FileStore, staging_dir
from quarry.settings import Settings
from warehouse.query import StoreInfo, run_query
from warehouse.reader import WarehouseReader

# Where rows_of and stream_batches were first defined; tests import them from here.
__all__ = ["Account", "Produced", "preview", "produce", "rows_of", "stream_batches", "write_file"]


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
    summary: FileSummary = field(default_factory=lambda: FileSummary("all"))


def file_key(job_id: str, file_format: str) -> str:
    """A job's file in the export file store (quarry.files.export_files): under its job
    id, never under the name a person sees."""
    return f"{job_id}/export{EXTENSIONS[file_format]}"


def manifest_key(job_id: str) -> str:
    """A job's manifest in the export file store, beside its file."""
    return f"{job_id}/manifest.json"


def staging_path(settings: Settings, files: FileStore, key: str) -> Path:
    """Where a run writes the file before it is in the store: in the store's own folder
    when that is local (a rename publishes it), else in this role's home."""
    local = files.local_path(key)
    return local if local is not None else staging_dir(settings) / key


def record_table(
    cursor: duckdb.DuckDBPyConnection, part: PartSpec, store_ids: Sequence[str]
) -> Table:
    """A record part: its columns and rows (_record_source)."""
    titles = [c.title for c in part.columns]
    names = column_names(part)
    if not store_ids:
        return Table(part.name, titles, iter(()), names=names, schema=record_schema(part))
    source = record_source(part, store_ids)
    batches = stream_batches(cursor, source.select(source.columns))
    return Table(
        part.name,
        titles,
        rows_of(batches),
        batches,
        partial(copy_csv, cursor, source, titles),
        sql=SqlPart(cursor, source),
        names=names,
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
    return Table(part.name, [c["title"] for c in result.columns], rows, names=names)


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
            source = record_source(part, store_ids)
            counted = cursor.execute(f"SELECT count(*) {source.from_where}").fetchone()
            head = cursor.execute(f"{source.select(source.columns)} LIMIT {int(first)}")
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
    starts: Mapping[str, int] | None = None,
    restarted: Mapping[str, str] | None = None,
    describe: Callable[[FileSummary], dict[str, Any]] | None = None,
) -> Produced:
    """Write the configuration's file to `target` from one snapshot of `store_ids`. The
    folder of `target` is the job's own: whatever fails, nothing of the run stays in it.

    `starts` (store -> snapshot), given for a changed-rows configuration, makes each record
    part the rows changed since then (exports.files.changes); `restarted` says why a store
    starts over. `describe` turns what was written into the manifest a zip carries inside
    (exports.files.manifest)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.name}{TEMPORARY_MARK}run")
    # Record parts read their own tables only; a saved query may read several.
    read_tables = None
    if all(part.entity_type != "query" for part in config.parts):
        read_tables = {record_dataset(part).table for part in config.parts}
    # The snapshot is pinned for the whole run: maintenance must not expire it under the
    # export, however long it takes.
    with (
        reader.pinned(store_ids) as snapshot,
        reader.connect(snapshot, read_tables) as cursor,
        contextlib.ExitStack() as kept,
    ):
        ranges: dict[str, StoreRange] | None = None
        reads = [StoreRead(s, snapshot.versions.get(s)) for s in sorted(store_ids)]
        if starts is not None:
            ranges, reads = change_ranges(cursor, snapshot.versions, starts, restarted or {})
            # The starts moved up (changed_parts.change_ranges) are not pinned as the
            # starts are: kept for the run.
            moved = {r.start for r in ranges.values() if r.start is not None}
            if extra := moved - set(starts.values()):
                kept.enter_context(reader.kept(extra))
        summaries: list[PartSummary] = []

        def tables() -> Iterator[Table]:
            for part in config.parts:
                dataset_name = part.entity_type
                if part.entity_type == "query":
                    summaries.append(PartSummary(part.name, "query", columns_of(part)))
                    yield query_table(cursor, part, account, store_ids)
                elif ranges is not None:
                    table, counts = changed_table(cursor, part, ranges)
                    columns = columns_of(part) + [
                        {"name": n, "title": n, "field": None}
                        for n in (CHANGE_COLUMN, SNAPSHOT_COLUMN)
                    ]
                    summaries.append(
                        PartSummary(part.name, dataset_name, columns, sum(counts.values()), counts)
                    )
                    yield table
                else:
                    summaries.append(PartSummary(part.name, dataset_name, columns_of(part)))
                    yield record_table(cursor, part, store_ids)

        try:
            rows, cut = write_file(
                config.format, config.options, tables(), partial, max_rows_per_sheet
            )
            if len(summaries) == 1 and summaries[0].rows is None:
                summaries[0] = replace(summaries[0], rows=rows)
            summary = FileSummary(config.rows, reads, summaries, rows)
            if config.format == "zip" and describe is not None:
                add_to_zip(partial, describe(summary))
            os.replace(partial, target)
            # A job's file never changes once written; a local delivery may be a hard link
            # to it (destinations.local), which must not be edited in place either.
            target.chmod(0o444)
        except BaseException:
            # The directory is the job's own: nothing half-written (or a writer's temporary
            # file) stays behind.
            shutil.rmtree(target.parent, ignore_errors=True)
            raise
    return Produced(target, rows, cut, summary)
