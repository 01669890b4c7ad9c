"""The demo platform's own database: Parquet files per store and a JSON state per account,
in the demo file store (quarry.files.demo_files: QUARRY_HOME/demo, or <QUARRY_DATA_URL>/demo
so that a worker on another host reads what was seeded elsewhere).

    <account_id>/state.json
    <account_id>/<store_id>/<table>.parquet   current rows, deleted ones gone
    <account_id>/<store_id>/deletions.parquet (id, dataset, deleted_at)

Each file is written under a temporary name and moved into place, so a reader sees a whole
old file or a whole new one. The files of one advance are published one after the other,
which no filesystem here does atomically (S3 least of all), so `publish` goes in the order
whose every partial result a sync tolerates: child tables, then parent tables, then
deletions; the state is written last. The connector reads the other way round (deletions,
parents, children), so whatever newer file it reads, the files it reads after it are at
least as new:
- new deletions come with new parents: a full sync never keeps a row whose deletion its
  cursor has already passed (published first, deletions would let it: the row stays
  for good);
- new parents come with new children: a sync never moves its cursor past an order whose
  new lines it did not see.
Older files only delay changes to the next sync. A publish cut short (an advance killed
while moving files: microseconds locally, a request per file on S3) leaves files of both
generations beside the old state, whose next platform ids the account's next advance would
hand out again: seed a new account then. The temporaries a killed advance left are swept by
the account's next one.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from platforms.demo.state import STATE_FILE, DemoState
from quarry.errors import ConfigurationError, NotFound
from quarry.files import TEMPORARY_MARK, FileStore, demo_files
from quarry.settings import Settings
from warehouse.schemas import SOURCE_DATASETS, TABLES, TS

STORE_TABLES: tuple[str, ...] = tuple(t for tables in SOURCE_DATASETS.values() for t in tables)
PARENT_TABLES = frozenset(tables[0] for tables in SOURCE_DATASETS.values())
DELETIONS = "deletions"
# Columns with (nearly) one value per row: a dictionary would only slow writing down.
_UNIQUE_COLUMNS = frozenset({
    "id", "platform_id", "order_id", "line_id", "refund_id", "customer_id", "order_name",
    "draft_order_name", "customer_name", "email", "handle", "created_at", "updated_at",
    "processed_at", "deleted_at",
})  # fmt: skip
# The footer's key-value entry holding a parent table's newest (updated_at, id), as a
# platform's index would answer "anything after this cursor?" (platforms.demo.probe).
NEWEST_KEY = b"quarry.newest"
# Row groups small enough that a reader asking for recent changes skips the old ones by
# their statistics (platforms.demo.connector), as an indexed platform database would.
ROW_GROUP_ROWS = 65_536
DELETIONS_SCHEMA = pa.schema(
    [pa.field("id", pa.string()), pa.field("dataset", pa.string()), pa.field("deleted_at", TS)]
)


@dataclass(frozen=True)
class Folder:
    """A folder of the demo file store: an account's or a store's."""

    files: FileStore
    key: str

    def __truediv__(self, name: str) -> Folder:
        return Folder(self.files, f"{self.key}/{name}")

    @property
    def name(self) -> str:
        return self.key.rsplit("/", 1)[-1]

    def path(self, name: str) -> str:
        """The path of file `name` in the store's filesystem."""
        return self.files.path(f"{self.key}/{name}")

    def exists(self) -> bool:
        return bool(self.files.keys(self.key))

    def local_path(self) -> Path | None:
        """The folder on the local disk, when the demo files are local."""
        return self.files.local_path(self.key)


@dataclass(frozen=True)
class Staged:
    """A file written under a temporary name, waiting for `publish`."""

    files: FileStore
    temporary: str
    final: str


def account_dir(settings: Settings, account_id: str) -> Folder:
    return Folder(demo_files(settings), account_id)


def store_dir(settings: Settings, account_id: str, store_id: str) -> Folder:
    return account_dir(settings, account_id) / store_id


def schema_of(table: str) -> pa.Schema:
    if table == DELETIONS:
        return DELETIONS_SCHEMA
    if table not in STORE_TABLES:
        raise ValueError(f"{table!r} is not a demo platform table")
    return TABLES[table].schema


def stage_tables(folder: Folder, tables: dict[str, pa.Table]) -> list[Staged]:
    """Write each table under a temporary name in `folder`; return them for `publish`.
    Nothing is visible to readers yet."""
    staged = []
    for name, table in tables.items():
        final = f"{folder.key}/{name}.parquet"
        temporary = f"{folder.key}/.{name}.parquet{TEMPORARY_MARK}{uuid.uuid4().hex[:8]}"
        folder.files.make_parent(temporary)
        dictionary = [c for c in table.schema.names if c not in _UNIQUE_COLUMNS]
        typed = table.cast(schema_of(name))
        if name in PARENT_TABLES:
            typed = typed.replace_schema_metadata({NEWEST_KEY: newest_position(typed)})
        pq.write_table(
            typed,
            folder.files.path(temporary),
            filesystem=folder.files.filesystem,
            compression="lz4",
            use_dictionary=dictionary,
            row_group_size=ROW_GROUP_ROWS,
        )
        staged.append(Staged(folder.files, temporary, final))
    return staged


def newest_position(table: pa.Table) -> bytes:
    """JSON of the largest (updated_at, id) in `table`: {"u": microseconds since the epoch,
    "i": id}; {"u": null, "i": null} for no rows."""
    if not len(table):
        return json.dumps({"u": None, "i": None}).encode()
    micros = table["updated_at"].cast(pa.int64())
    updated = pc.max(micros).as_py()
    at_newest = table.filter(pc.equal(micros, updated))
    return json.dumps({"u": updated, "i": pc.max(at_newest["id"]).as_py()}).encode()


def publish(staged: Iterable[Staged]) -> None:
    """Move staged files into place: children, then parents, then deletions (why: the
    module's docstring)."""
    for item in sorted(staged, key=_publish_rank):
        item.files.move(item.temporary, item.final)


def _publish_rank(item: Staged) -> int:
    table = item.final.rsplit("/", 1)[-1].removesuffix(".parquet")
    if table == DELETIONS:
        return 2
    return 1 if table in PARENT_TABLES else 0


def discard(staged: Iterable[Staged]) -> None:
    for item in staged:
        item.files.remove(item.temporary)


def read_store_table(
    folder: Folder, table: str, filters: list[tuple[str, str, Any]] | None = None
) -> pa.Table:
    """The rows of `table` in a store folder (an empty table before any deletion); with
    `filters` (pyarrow's DNF), only the rows that match, skipping row groups whose
    statistics rule them out."""
    schema = schema_of(table)
    name = f"{table}.parquet"
    if table == DELETIONS and folder.files.size(f"{folder.key}/{name}") is None:
        return schema.empty_table()
    with folder.files.open_input(f"{folder.key}/{name}") as source:
        return pq.read_table(source, schema=schema, filters=filters)


def read_children(folder: Folder, table: str, key: str, parent_ids: pa.Array) -> pa.Table:
    """The rows of `table` whose `key` is one of `parent_ids`, reading only the row groups
    whose `key` range holds one of them (a platform's index lookup, in file terms)."""
    schema = schema_of(table)
    with folder.files.open_input(f"{folder.key}/{table}.parquet") as handle:
        source = pq.ParquetFile(handle)
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
    folder = store_dir(settings, account_id, store_id)
    if not folder.exists():
        raise NotFound(f"no demo data for store {store_id!r} of account {account_id!r}")
    return read_store_table(folder, table)


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


def read_state(folder: Folder) -> DemoState | None:
    """The state of the account folder, or None when there is none."""
    data = folder.files.get_bytes(f"{folder.key}/{STATE_FILE}")
    if data is None:
        return None
    try:
        return DemoState.from_json(json.loads(data))
    except (ValueError, KeyError, TypeError) as exc:
        where = f"{folder.files.url}/{folder.key}/{STATE_FILE}"
        raise ConfigurationError(f"demo state {where} is unreadable: {exc}") from exc


def write_state(folder: Folder, state: DemoState) -> None:
    """Write the state atomically: readers see the old file or the new one, never half."""
    text = json.dumps(state.to_json(), indent=2, ensure_ascii=False)
    folder.files.put_bytes(f"{folder.key}/{STATE_FILE}", text.encode())


def demo_accounts(settings: Settings) -> list[str]:
    """Ids of the accounts that have demo data, sorted."""
    keys = demo_files(settings).keys()
    return sorted(k.split("/")[0] for k in keys if k.count("/") == 1 and k.endswith(STATE_FILE))


def find_account_id(settings: Settings, store_id: str) -> str | None:
    """The account whose demo data holds `store_id`, by looking at the files."""
    for account_id in demo_accounts(settings):
        if store_dir(settings, account_id, store_id).exists():
            return account_id
    return None


def delete_store_files(settings: Settings, store_id: str) -> None:
    """Forget a removed store: its files go and later advances skip it. Idempotent."""
    account_id = find_account_id(settings, store_id)
    if account_id is None:
        return
    folder = account_dir(settings, account_id)
    state = read_state(folder)
    if state is not None and state.store(store_id) is not None:
        state.stores = [s for s in state.stores if s.id != store_id]
        write_state(folder, state)
    demo_files(settings).remove(f"{account_id}/{store_id}")
