"""Where the Delta tables live, how they are created, and table-wide helpers.

Every table of warehouse.schemas.TABLES is a Delta table at `settings.warehouse_dir / name`,
partitioned by store_id unless its spec says otherwise. Tables are created empty with their
exact Arrow schema, so a reader can query one before anything was synced.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from deltalake import CommitProperties, DeltaTable
from deltalake.exceptions import CommitFailedError, DeltaError, TableNotFoundError

from quarry.settings import Settings
from warehouse.schemas import TABLES, TableSpec

STORE_COLUMN = "store_id"

# Written by every writer's post-commit hook, so opening a table (which replays the log from
# the last checkpoint) stays fast however many pages a sync commits.
CHECKPOINT_INTERVAL = 20

# Files of 10,000 to 30,000 orders or lines: an incremental sync of recent orders rewrites
# one or two of them, and a partition of 1M orders is still under a hundred files.
TARGET_FILE_SIZE = 2 * 1024 * 1024

TABLE_CONFIGURATION: dict[str, str | None] = {
    "delta.checkpointInterval": str(CHECKPOINT_INTERVAL),
    # Readers open the exact version recorded in a store's latest snapshot, which may be
    # months old for a store that stopped syncing; expired-log cleanup would make such a
    # version unloadable. The log stays small per commit, and checkpoints keep opening fast.
    "delta.enableExpiredLogCleanup": "false",
    # Merges and compaction rewrite whole files: bounded files keep an incremental sync's
    # merge to the few files its changes touch (recent orders, mostly) instead of letting
    # one merge fold the partition into a single file that every later merge rewrites.
    "delta.targetFileSize": str(TARGET_FILE_SIZE),
}

_STORE_ID = re.compile(r"^[a-z0-9_]+$")


def clustering_key(name: str) -> tuple[str, ...]:
    """The columns that order the rows of a store's partition of `name`, so that each file
    holds one contiguous range of them and a change touches the files of its range only.

    Parents go by creation time then id: incremental syncs mostly change recent records.
    Children go by their parent's id then their own: their replacement is keyed by the
    parent, and platform ids grow with creation time (ordered numerically, see
    warehouse.rewrite.sort_clustered), so this is roughly creation order too. Tables
    without either (exchange_rates) go by primary key."""
    table_spec = spec(name)
    if table_spec.parent_key is not None:
        return (table_spec.parent_key, *table_spec.primary_key)
    if "created_at" in table_spec.schema.names:
        return ("created_at", *table_spec.primary_key)
    return table_spec.primary_key


def table_path(settings: Settings, name: str) -> Path:
    """The directory of table `name`; raises KeyError for a name that is not a table."""
    spec(name)
    return settings.warehouse_dir / name


def spec(name: str) -> TableSpec:
    """The TableSpec of `name`; KeyError names the unknown table."""
    try:
        return TABLES[name]
    except KeyError:
        raise KeyError(f"{name!r} is not a warehouse table") from None


def store_literal(store_id: str) -> str:
    """`store_id` as a SQL string literal. Store ids are [a-z0-9_], so anything else is a bug
    or an attack and is refused rather than escaped."""
    if not _STORE_ID.match(store_id):
        raise ValueError(f"not a store id: {store_id!r}")
    return f"'{store_id}'"


def store_predicate(store_id: str, alias: str | None = None) -> str:
    """SQL selecting one store's partition, e.g. `t.store_id = 'st_1'`."""
    column = f"{alias}.{STORE_COLUMN}" if alias else STORE_COLUMN
    return f"{column} = {store_literal(store_id)}"


def ensure_tables(settings: Settings) -> None:
    """Create every missing table, empty, with its schema and partitioning.

    Idempotent. When two processes race, the Delta log's put-if-absent commit of version 0
    lets exactly one create each table; the loser finds it there and moves on.
    """
    settings.warehouse_dir.mkdir(parents=True, exist_ok=True)
    for name, table_spec in TABLES.items():
        path = settings.warehouse_dir / name
        if DeltaTable.is_deltatable(str(path)):
            continue
        try:
            DeltaTable.create(
                str(path),
                table_spec.schema,
                mode="error",
                partition_by=[STORE_COLUMN] if table_spec.partitioned else None,
                name=name,
                configuration=TABLE_CONFIGURATION,
                # A creator that lost the race must fail, not retry as version 1.
                commit_properties=CommitProperties(max_commit_retries=0),
            )
        except (CommitFailedError, DeltaError):
            if not DeltaTable.is_deltatable(str(path)):
                raise


def open_table(settings: Settings, name: str, version: int | None = None) -> DeltaTable:
    """The Delta table `name` at `version` (latest when None)."""
    path = table_path(settings, name)
    try:
        return DeltaTable(str(path), version=version)
    except TableNotFoundError:
        ensure_tables(settings)
        return DeltaTable(str(path), version=version)


def current_versions(settings: Settings, table_names: Iterable[str]) -> dict[str, int]:
    """The latest committed version of each named table, for a snapshot to record."""
    return {name: open_table(settings, name).version() for name in table_names}


def delete_store(settings: Settings, store_id: str) -> dict[str, int]:
    """Remove every row of `store_id` from every partitioned table, one commit per table
    that holds any. Returns the rows deleted per table.

    The partition predicate lets Delta drop whole files without rewriting anything."""
    ensure_tables(settings)
    predicate = store_predicate(store_id)
    deleted: dict[str, int] = {}
    for name, table_spec in TABLES.items():
        if not table_spec.partitioned:
            continue
        table = open_table(settings, name)
        if not table.file_uris(file_pruning_predicate=[(STORE_COLUMN, "=", store_id)]):
            continue
        metrics = table.delete(predicate)
        deleted[name] = int(metrics.get("num_deleted_rows", 0))
    return deleted
