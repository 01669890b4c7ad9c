"""Has anything changed since a store's cursors? Answered from the demo files' Parquet
footers (the row groups' statistics of `updated_at` and `deleted_at`), as a platform would
answer from an index: no table is read, except the few rows that share the cursor's own
`updated_at` (a tie the statistics cannot settle)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pyarrow.parquet as pq

from platforms.demo.cursor import Position, decode
from platforms.demo.storage import DELETIONS, Folder, read_store_table
from warehouse.schemas import SOURCE_DATASETS, TS

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def _micros(value: object) -> int | None:
    """A footer statistic of a timestamp column as microseconds since the epoch."""
    if isinstance(value, datetime):
        # Naive values are UTC in these files (their type says so).
        moment = value if value.tzinfo else value.replace(tzinfo=UTC)
        return (moment - _EPOCH) // _MICROSECOND
    if isinstance(value, int):
        return value
    return None


def newest(folder: Folder, table: str, column: str) -> int | None:
    """The largest value of timestamp `column` in the file of `table`, in microseconds since
    the epoch, from the footer alone; None when the file is empty or has no file (nothing to
    compare). Raises LookupError when a row group lacks statistics."""
    key = f"{folder.key}/{table}.parquet"
    if folder.files.size(key) is None:
        return None
    with folder.files.open_input(key) as handle:
        metadata = pq.ParquetFile(handle).metadata
    index = metadata.schema.to_arrow_schema().get_field_index(column)
    largest: int | None = None
    for group in range(metadata.num_row_groups):
        if metadata.row_group(group).num_rows == 0:
            continue
        stats = metadata.row_group(group).column(index).statistics
        value = _micros(stats.max) if stats is not None and stats.has_min_max else None
        if value is None:
            raise LookupError(f"{key}: row group {group} has no statistics for {column}")
        largest = value if largest is None else max(largest, value)
    return largest


def changed_since(folder: Folder, cursors: Mapping[str, str | None]) -> list[str]:
    """The datasets of the store in `folder` with records changed or deleted after their
    cursor in `cursors` (a dataset without a cursor has everything to sync). A footer
    without statistics counts as a change: the sync reads what the probe could not."""
    try:
        deleted = newest(folder, DELETIONS, "deleted_at")
    except LookupError:
        return list(SOURCE_DATASETS)
    changed = []
    for dataset, tables in SOURCE_DATASETS.items():
        position = decode(cursors.get(dataset))
        if position is None or _has_newer(folder, tables[0], position, deleted):
            changed.append(dataset)
    return changed


def _has_newer(folder: Folder, parent: str, position: Position, deleted: int | None) -> bool:
    if deleted is not None and (position.deleted is None or deleted > position.deleted):
        return True
    try:
        updated = newest(folder, parent, "updated_at")
    except LookupError:
        return True
    if updated is None:
        return False
    if position.updated is None or updated > position.updated:
        return True
    if updated < position.updated:
        return False
    # Records that share the cursor's updated_at come after it when their id is larger.
    tied = read_store_table(folder, parent, [("updated_at", "==", pa.scalar(position.updated, TS))])
    return any(record_id > (position.id or "") for record_id in tied["id"].to_pylist())
