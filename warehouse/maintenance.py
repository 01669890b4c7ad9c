"""Lake maintenance: flush inlined rows, merge small files, rewrite files heavy with
deletes, expire snapshots nobody reads, and delete the files nothing references.

DuckLake keeps small inserts and deletes in the catalog (data inlining) and writes every
delete as a delete file: cheap to write, slower to read as they pile up. Maintenance turns
them back into plain Parquet files. It never loses a snapshot somebody reads: DuckLake
does not protect a snapshot in use (once expired and cleaned up, a pinned reader fails
with "No snapshot found"), so expiry passes an explicit list of versions that leaves out
every version in use (warehouse.snapshots.versions_in_use) and every version younger than
the retention.

Nor does it delete a file a running reader may still open. DuckLake schedules a replaced
file for deletion at once even when older snapshots still read its rows elsewhere (flushing
a few deletes kept in the catalog into a file's delete file writes a new delete file and
schedules the old one), and a statement that listed its files before the pass opens them
later: an export of 10M orders failed with "Cannot open file ...-delete.parquet" when the
hourly pass ran under it. So a scheduled file is deleted only once it has been scheduled
for longer than the retention (QUARRY_SNAPSHOT_RETENTION_HOURS, the time a replaced
snapshot is kept; `_scheduled_before` says why it may stay up to a day longer).

Each step is one DuckLake call under the lake's write lock: no sync commits in between,
and files a writer has written but not committed yet cannot be taken for orphans.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta

from registry.db import Registry
from registry.models import utcnow
from warehouse.lake import LAKE, Lake, write_lock
from warehouse.snapshots import forget_expired_pins, versions_in_use
from warehouse.sql_values import bind


@dataclass(frozen=True)
class MaintenanceResult:
    """What one maintenance pass did, for asset metadata."""

    inlined_rows_flushed: int
    files_merged: int
    files_rewritten: int
    snapshots_expired: int
    files_deleted: int
    versions_kept: tuple[int, ...]


def maintain(
    lake: Lake, registry: Registry, *, retention: timedelta | None = None
) -> MaintenanceResult:
    """One maintenance pass over the whole lake. `retention` overrides
    QUARRY_SNAPSHOT_RETENTION_HOURS (tests use zero)."""
    if retention is None:
        retention = timedelta(hours=lake.settings.snapshot_retention_hours)
    flushed = _call(lake, f"ducklake_flush_inlined_data('{LAKE}')")
    merged = _call(lake, f"ducklake_merge_adjacent_files('{LAKE}')")
    rewritten = _call(lake, f"ducklake_rewrite_data_files('{LAKE}')")
    with write_lock(lake.settings):
        with registry.session() as session:
            forget_expired_pins(session)
            keep = versions_in_use(session, retention)
        expired = _expire(lake, keep, retention)
        cursor = lake.cursor()
        try:
            before = _scheduled_before(retention)
            cleanup = (
                f"CALL ducklake_cleanup_old_files('{LAKE}', cleanup_all => true)"
                if before is None
                else bind(f"CALL ducklake_cleanup_old_files('{LAKE}', older_than => ?)", [before])
            )
            deleted = len(cursor.execute(cleanup).fetchall())
            deleted += len(
                cursor.execute(
                    f"CALL ducklake_delete_orphaned_files('{LAKE}', cleanup_all => true)"
                ).fetchall()
            )
        finally:
            cursor.close()
    return MaintenanceResult(
        inlined_rows_flushed=flushed,
        files_merged=merged,
        files_rewritten=rewritten,
        snapshots_expired=expired,
        files_deleted=deleted,
        versions_kept=tuple(sorted(keep)),
    )


def _scheduled_before(retention: timedelta) -> datetime | None:
    """Files scheduled for deletion before this may be deleted (None: all of them, for no
    retention). DuckLake on a SQLite catalog compares the bound by its date alone (a file
    scheduled at 07:36 counts as older than 00:00 of the same day), so the bound ends just
    before the day of now - retention begins: every file stays for the retention at least,
    and at most a day longer."""
    if retention <= timedelta(0):
        return None
    day = (utcnow() - retention).date()
    return datetime.combine(day, time.min, tzinfo=UTC) - timedelta(microseconds=1)


def _call(lake: Lake, call: str) -> int:
    """Run one maintenance CALL under the write lock. Its rows are (schema, table, count,
    ...): the sum of the counts (rows flushed, files processed)."""
    with write_lock(lake.settings):
        cursor = lake.cursor()
        try:
            return sum(int(row[2] or 0) for row in cursor.execute(f"CALL {call}").fetchall())
        finally:
            cursor.close()


def _expire(lake: Lake, keep: set[int], retention: timedelta) -> int:
    """Expire every snapshot older than `retention` that is neither in `keep` nor the
    newest. The caller holds the write lock."""
    cursor = lake.cursor()
    try:
        newest = cursor.execute(f"SELECT id FROM {LAKE}.current_snapshot()").fetchone()
        candidates = cursor.execute(
            bind(
                f"SELECT snapshot_id FROM {LAKE}.snapshots() WHERE snapshot_time < ? "
                "ORDER BY snapshot_id",
                [utcnow() - retention],
            )
        ).fetchall()
        assert newest is not None
        versions = [v for (v,) in candidates if v not in keep and v != newest[0]]
        if versions:
            cursor.execute(
                bind(f"CALL ducklake_expire_snapshots('{LAKE}', versions => ?)", [versions])
            ).fetchall()
        return len(versions)
    finally:
        cursor.close()
