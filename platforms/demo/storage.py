"""The demo platform's own database: Parquet files per store and a JSON state per account.

    QUARRY_HOME/demo/<account_id>/state.json
    QUARRY_HOME/demo/<account_id>/<store_id>/<table>.parquet   current rows, deleted ones gone
    QUARRY_HOME/demo/<account_id>/<store_id>/deletions.parquet (id, dataset, deleted_at)

Files are written under temporary names and renamed into place, so a reader sees a whole old
file or a whole new one.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from platforms.demo.state import STATE_FILE, DemoState, read_state, write_state
from quarry.errors import NotFound
from quarry.settings import Settings
from warehouse.schemas import SOURCE_DATASETS, TABLES, TS

STORE_TABLES: tuple[str, ...] = tuple(t for tables in SOURCE_DATASETS.values() for t in tables)
DELETIONS = "deletions"
# Columns with (nearly) one value per row: a dictionary would only slow writing down.
_UNIQUE_COLUMNS = frozenset({
    "id", "platform_id", "order_id", "line_id", "refund_id", "customer_id", "order_name",
    "draft_order_name", "customer_name", "email", "handle", "created_at", "updated_at",
    "processed_at", "deleted_at",
})  # fmt: skip
# Row groups small enough that a reader asking for recent changes skips the old ones by
# their statistics (platforms.demo.connector), as an indexed platform database would.
ROW_GROUP_ROWS = 65_536
DELETIONS_SCHEMA = pa.schema(
    [pa.field("id", pa.string()), pa.field("dataset", pa.string()), pa.field("deleted_at", TS)]
)


def account_dir(settings: Settings, account_id: str) -> Path:
    return settings.demo_dir / account_id


def store_dir(settings: Settings, account_id: str, store_id: str) -> Path:
    return account_dir(settings, account_id) / store_id


def schema_of(table: str) -> pa.Schema:
    if table == DELETIONS:
        return DELETIONS_SCHEMA
    if table not in STORE_TABLES:
        raise ValueError(f"{table!r} is not a demo platform table")
    return TABLES[table].schema


def stage_tables(directory: Path, tables: dict[str, pa.Table]) -> list[tuple[Path, Path]]:
    """Write each table to a temporary file in `directory`; return (temporary, final) pairs
    for `publish`. Nothing is visible to readers yet."""
    directory.mkdir(parents=True, exist_ok=True)
    staged = []
    for name, table in tables.items():
        final = directory / f"{name}.parquet"
        temporary = directory / f".{name}.parquet.tmp"
        dictionary = [c for c in table.schema.names if c not in _UNIQUE_COLUMNS]
        pq.write_table(
            table.cast(schema_of(name)),
            temporary,
            compression="lz4",
            use_dictionary=dictionary,
            row_group_size=ROW_GROUP_ROWS,
        )
        staged.append((temporary, final))
    return staged


def publish(staged: Iterable[tuple[Path, Path]]) -> None:
    for temporary, final in staged:
        os.replace(temporary, final)


def discard(staged: Iterable[tuple[Path, Path]]) -> None:
    for temporary, _ in staged:
        temporary.unlink(missing_ok=True)


def read_store_table(
    directory: Path, table: str, filters: list[tuple[str, str, Any]] | None = None
) -> pa.Table:
    """The rows of `table` in a store directory (an empty table before any deletion);
    with `filters` (pyarrow's DNF), only the rows that match, skipping row groups whose
    statistics rule them out."""
    schema = schema_of(table)
    path = directory / f"{table}.parquet"
    if table == DELETIONS and not path.exists():
        return schema.empty_table()
    return pq.read_table(path, schema=schema, filters=filters)


def read_children(directory: Path, table: str, key: str, parent_ids: pa.Array) -> pa.Table:
    """The rows of `table` whose `key` is one of `parent_ids`, reading only the row groups
    whose `key` range holds one of them (a platform's index lookup, in file terms)."""
    schema = schema_of(table)
    source = pq.ParquetFile(directory / f"{table}.parquet")
    wanted = np.sort(np.asarray(parent_ids.to_numpy(zero_copy_only=False), dtype=object))
    column = source.schema_arrow.get_field_index(key)
    groups = []
    for index in range(source.metadata.num_row_groups):
        stats = source.metadata.row_group(index).column(column).statistics
        if stats is None or not stats.has_min_max:
            groups.append(index)
            continue
        first = np.searchsorted(wanted, stats.min, side="left")
        if first < len(wanted) and wanted[first] <= stats.max:
            groups.append(index)
    rows = source.read_row_groups(groups).cast(schema) if groups else schema.empty_table()
    return rows.filter(pc.is_in(rows[key], value_set=parent_ids))


def load_table(settings: Settings, account_id: str, store_id: str, table: str) -> pa.Table:
    """Ground truth: the current (not deleted) rows of one demo store's `table`, in the
    table's warehouse schema. NotFound when the store has no demo data."""
    directory = store_dir(settings, account_id, store_id)
    if not directory.is_dir():
        raise NotFound(f"no demo data for store {store_id!r} of account {account_id!r}")
    return read_store_table(directory, table)


def load_deletions(settings: Settings, account_id: str, store_id: str) -> pa.Table:
    """Every deletion in a demo store so far: id, dataset (a SOURCE_DATASETS name) and
    deleted_at."""
    return read_store_table(store_dir(settings, account_id, store_id), DELETIONS)


def load_state(settings: Settings, account_id: str) -> DemoState:
    """The account's demo state; NotFound when the account has no demo data."""
    state = read_state(account_dir(settings, account_id))
    if state is None:
        raise NotFound(f"account {account_id!r} has no demo data")
    return state


def save_state(settings: Settings, state: DemoState) -> None:
    write_state(account_dir(settings, state.account_id), state)


def demo_accounts(settings: Settings) -> list[str]:
    """Ids of the accounts that have demo data, sorted."""
    if not settings.demo_dir.exists():
        return []
    return sorted(p.parent.name for p in settings.demo_dir.glob(f"*/{STATE_FILE}"))


def find_account_id(settings: Settings, store_id: str) -> str | None:
    """The account whose demo data holds `store_id`, by looking at the directories."""
    for account_id in demo_accounts(settings):
        if store_dir(settings, account_id, store_id).is_dir():
            return account_id
    return None


def delete_store_files(settings: Settings, store_id: str) -> None:
    """Forget a removed store: its files go and later advances skip it. Idempotent."""
    account_id = find_account_id(settings, store_id)
    if account_id is None:
        return
    state = read_state(account_dir(settings, account_id))
    if state is not None and state.store(store_id) is not None:
        state.stores = [s for s in state.stores if s.id != store_id]
        save_state(settings, state)
    shutil.rmtree(store_dir(settings, account_id, store_id), ignore_errors=True)


def delete_account_files(settings: Settings, account_id: str) -> None:
    shutil.rmtree(account_dir(settings, account_id), ignore_errors=True)
