"""Table maintenance: compaction, checkpoints and vacuum.

Contract for the pipelines:

- Compact a store's partition (`maintain(settings, table, store_id)`) after its sync has
  written its tables and BEFORE recording its snapshot (warehouse.snapshots), and record
  the version compaction produced (`warehouse.tables.current_versions`). Readers then open
  the compacted files, and the many small files of the sync are unreferenced by any
  snapshot once the next one is recorded.
- Do not run two writers of one table at once (maintenance included): they share the
  table's concurrency pool.

Vacuum deletes files that the latest table version no longer references and that were
removed more than `settings.vacuum_retention_hours` ago (24 h by default: longer than the
longest read or export). It also keeps every file of the versions that some store's newest
snapshot points at, so a store whose re-sync failed halfway, or that has not synced for a
week, stays readable however old its snapshot is. Delta refuses a retention shorter than
the table's `delta.deletedFileRetentionDuration` (7 days by default) unless told not to
enforce it; Quarry's own retention is the operator's setting, so vacuum turns that check off
exactly when the setting is shorter than Delta's default, and refuses a setting below one
hour (a retention of 0 would delete files that running reads still open).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from deltalake import CommitProperties, DeltaTable

from quarry.errors import ConfigurationError
from quarry.settings import Settings
from registry.db import Registry
from warehouse.rewrite import compact_partition
from warehouse.snapshots import referenced_versions
from warehouse.tables import CHECKPOINT_INTERVAL, open_table, spec, table_path

DELTA_DEFAULT_RETENTION_HOURS = 7 * 24
MIN_RETENTION_HOURS = 1


@dataclass(frozen=True)
class MaintenanceResult:
    """What maintenance did to one table, for asset metadata."""

    table: str
    files_removed_by_compaction: int
    files_added_by_compaction: int
    checkpoint_version: int | None
    files_vacuumed: int
    version: int


def maintain(
    settings: Settings,
    table: str,
    store_id: str | None = None,
    *,
    registry: Registry | None = None,
    checkpoint_every: int = CHECKPOINT_INTERVAL,
    retention_hours: int | None = None,
) -> MaintenanceResult:
    """Compact `table` (only `store_id`'s partition when given), checkpoint it when
    `checkpoint_every` commits passed since the last checkpoint, and vacuum it.

    `registry` tells vacuum which versions the newest snapshots reference (one is opened
    from `settings` when None). `retention_hours` overrides the setting, for tests only.
    """
    retention = settings.vacuum_retention_hours if retention_hours is None else retention_hours
    if retention_hours is None and retention < MIN_RETENTION_HOURS:
        raise ConfigurationError(
            f"QUARRY_VACUUM_RETENTION_HOURS must be at least {MIN_RETENTION_HOURS}, "
            f"got {retention}: a shorter retention deletes files that running reads use"
        )
    delta = open_table(settings, table)
    removed, added = compact(delta, table, store_id, table_path(settings, table))
    checkpoint = checkpoint_if_due(settings, delta, table, checkpoint_every)
    keep = _referenced(settings, registry, table)
    vacuumed = delta.vacuum(
        retention_hours=retention,
        dry_run=False,
        enforce_retention_duration=retention >= DELTA_DEFAULT_RETENTION_HOURS,
        keep_versions=sorted(keep),
    )
    delta.update_incremental()
    return MaintenanceResult(table, removed, added, checkpoint, len(vacuumed), delta.version())


def compact(delta: DeltaTable, table: str, store_id: str | None, root: Path) -> tuple[int, int]:
    """Rewrite small files into large ones; returns (files removed, files added).

    A store's partition is compacted in clustering order (warehouse.rewrite), which Delta's
    bin-packing compaction would destroy; a whole table (no store given, or not partitioned,
    such as exchange_rates) is small and keeps Delta's compaction."""
    if store_id is not None and spec(table).partitioned:
        return compact_partition(
            delta,
            root,
            spec(table),
            store_id,
            CommitProperties(
                custom_metadata={"quarry.store_id": store_id, "quarry.operation": "compact"}
            ),
        )
    metrics = delta.optimize.compact()
    return int(metrics.get("numFilesRemoved", 0)), int(metrics.get("numFilesAdded", 0))


def last_checkpoint(settings: Settings, table: str) -> int | None:
    """The version of the table's last checkpoint, or None before the first."""
    marker = table_path(settings, table) / "_delta_log" / "_last_checkpoint"
    try:
        return int(json.loads(marker.read_text())["version"])
    except FileNotFoundError:
        return None


def checkpoint_if_due(settings: Settings, delta: DeltaTable, table: str, every: int) -> int | None:
    """Write a checkpoint when `every` commits passed since the last one; returns the
    version checkpointed, or None. Writers checkpoint every CHECKPOINT_INTERVAL commits
    themselves; this catches tables written by tools that skip the post-commit hook."""
    delta.update_incremental()
    version = delta.version()
    last = last_checkpoint(settings, table)
    if version - (last if last is not None else 0) < every:
        return None
    delta.create_checkpoint()
    return version


def _referenced(settings: Settings, registry: Registry | None, table: str) -> set[int]:
    if registry is not None:
        with registry.session() as session:
            return referenced_versions(session, table)
    own = Registry(settings, run_migrations=False)
    try:
        with own.session() as session:
            return referenced_versions(session, table)
    finally:
        own.dispose()
