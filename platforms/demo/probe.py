"""Has anything changed since a store's cursors? Answered from the demo files' Parquet
footers, as a platform would answer from an index: a parent table's footer names its newest
(updated_at, id) (platforms.demo.storage.NEWEST_KEY), the deletions' footer statistics their
newest `deleted_at`. No table is read, except in a file written before footers named their
newest record: there the row groups' statistics decide, and the rows that share the cursor's
own `updated_at` (a tie the statistics cannot settle) are read."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from platforms.demo.cursor import Position, decode
from platforms.demo.storage import DELETIONS, NEWEST_KEY, Folder
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


def _footer(folder: Folder, table: str) -> pq.FileMetaData | None:
    """The footer of `table`'s file; None when the store has no such file."""
    key = f"{folder.key}/{table}.parquet"
    if folder.files.size(key) is None:
        return None
    with folder.files.open_input(key) as handle:
        return pq.ParquetFile(handle).metadata


def _ranges(metadata: pq.FileMetaData, column: str) -> list[tuple[int, int, int]]:
    """(row group, min, max) of timestamp `column` in every non-empty row group, in
    microseconds since the epoch. Raises LookupError when a row group lacks statistics."""
    index = metadata.schema.to_arrow_schema().get_field_index(column)
    ranges = []
    for group in range(metadata.num_row_groups):
        if metadata.row_group(group).num_rows == 0:
            continue
        stats = metadata.row_group(group).column(index).statistics
        low, high = (
            (_micros(stats.min), _micros(stats.max))
            if stats is not None and stats.has_min_max
            else (None, None)
        )
        if low is None or high is None:
            raise LookupError(f"row group {group} has no statistics for {column}")
        ranges.append((group, low, high))
    return ranges


def newest(folder: Folder, table: str, column: str) -> int | None:
    """The largest value of timestamp `column` in the file of `table`, in microseconds since
    the epoch, from the footer alone; None when the file is empty or has no file (nothing to
    compare). Raises LookupError when a row group lacks statistics."""
    metadata = _footer(folder, table)
    ranges = [] if metadata is None else _ranges(metadata, column)
    return max((high for _, _, high in ranges), default=None)


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
    metadata = _footer(folder, parent)
    if metadata is None:
        return False
    recorded = (metadata.metadata or {}).get(NEWEST_KEY)
    if recorded is not None:
        newest_record = json.loads(recorded)
        if newest_record["u"] is None:
            return False
        if position.updated is None:
            return True
        return (newest_record["u"], newest_record["i"]) > (position.updated, position.id or "")
    try:
        ranges = _ranges(metadata, "updated_at")
    except LookupError:
        return True
    updated = max((high for _, _, high in ranges), default=None)
    if updated is None:
        return False
    if position.updated is None or updated > position.updated:
        return True
    if updated < position.updated:
        return False
    # The newest records share the cursor's updated_at (as they do whenever nothing
    # changed): those with a larger id come after it. Only the row groups whose range holds
    # that instant can have them.
    tied = [group for group, low, high in ranges if low <= position.updated <= high]
    return _tie_after(folder, parent, metadata, tied, position)


def _tie_after(
    folder: Folder, parent: str, metadata: pq.FileMetaData, groups: list[int], position: Position
) -> bool:
    """Whether row groups `groups` of `parent` hold a record updated at the cursor's instant
    with an id after the cursor's: settled by the groups' `id` statistics when their largest
    id is not after it, else by reading the two columns of those groups alone."""
    cursor_id = position.id or ""
    id_index = metadata.schema.to_arrow_schema().get_field_index("id")
    largest_ids = [metadata.row_group(g).column(id_index).statistics for g in groups]
    if all(s is not None and s.has_min_max and s.max <= cursor_id for s in largest_ids):
        return False
    with folder.files.open_input(f"{folder.key}/{parent}.parquet") as handle:
        rows = pq.ParquetFile(handle).read_row_groups(
            groups, columns=["updated_at", "id"], use_threads=False
        )
    at_cursor = pc.equal(rows["updated_at"], pa.scalar(position.updated, TS))
    return bool(pc.any(pc.and_(at_cursor, pc.greater(rows["id"], cursor_id))).as_py())
