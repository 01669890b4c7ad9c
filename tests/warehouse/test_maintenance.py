"""Maintenance: compaction keeps content, checkpoints come due, vacuum spares snapshots."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from quarry.errors import ConfigurationError
from quarry.settings import Settings
from registry.db import Registry
from tests.warehouse.conftest import current_rows, fetch_dicts, orders_page
from warehouse import rewrite
from warehouse.maintenance import last_checkpoint, maintain
from warehouse.reader import WarehouseReader
from warehouse.snapshots import record_snapshot
from warehouse.tables import current_versions, open_table, table_path
from warehouse.writer import StoreWriter


def _sync_in_pages(settings: Settings, store: str, pages: int, start: int = 0) -> None:
    writer = StoreWriter(settings, store)
    for n in range(pages):
        first = start + n * 10
        page = orders_page(store, range(first, first + 10))
        writer.apply(page, full=True, first=n == 0)


def _parquet_files(settings: Settings, table: str) -> set[str]:
    files = table_path(settings, table).rglob("*.parquet")
    return {str(p) for p in files if "_delta_log" not in p.parts}


def _all_orders(reader: WarehouseReader, store: str) -> list[dict]:
    with reader.read([store]) as cursor:
        return fetch_dicts(cursor, "SELECT * FROM orders")


def test_compaction_reduces_files_of_one_store_and_keeps_content(
    quarry_env: Settings, registry: Registry
) -> None:
    _sync_in_pages(quarry_env, "st_a", 5)
    _sync_in_pages(quarry_env, "st_b", 3)
    # An incremental page too, so compaction also reads files the writer rewrote itself.
    StoreWriter(quarry_env, "st_a").apply(
        orders_page("st_a", [3, 45, 99], version=1), full=False, first=False
    )
    before = current_rows(quarry_env, "orders")
    files_b = open_table(quarry_env, "orders").file_uris(
        file_pruning_predicate=[("store_id", "=", "st_b")]
    )

    result = maintain(quarry_env, "orders", "st_a", registry=registry)

    table = open_table(quarry_env, "orders")
    assert result.files_removed_by_compaction > 1
    assert result.files_added_by_compaction == 1
    assert len(table.file_uris(file_pruning_predicate=[("store_id", "=", "st_a")])) == 1
    assert table.file_uris(file_pruning_predicate=[("store_id", "=", "st_b")]) == files_b
    assert current_rows(quarry_env, "orders") == before


def test_old_snapshot_stays_readable_after_vacuum(
    quarry_env: Settings, registry: Registry, reader: WarehouseReader
) -> None:
    _sync_in_pages(quarry_env, "st_a", 3)
    record_snapshot(registry, "st_a", current_versions(quarry_env, ["orders"]))
    recorded = _all_orders(reader, "st_a")
    # A re-sync that replaces the partition and fails before recording its snapshot,
    # then maintenance with the default retention.
    _sync_in_pages(quarry_env, "st_a", 2, start=100)
    result = maintain(quarry_env, "orders", "st_a", registry=registry)
    assert result.files_vacuumed == 0

    fresh_reader = WarehouseReader(quarry_env, registry)
    try:
        assert _all_orders(fresh_reader, "st_a") == recorded
    finally:
        fresh_reader.close()


def test_vacuum_keeps_what_newest_snapshots_reference_even_past_retention(
    quarry_env: Settings, registry: Registry
) -> None:
    _sync_in_pages(quarry_env, "st_a", 2)
    record_snapshot(registry, "st_a", current_versions(quarry_env, ["orders"]))
    referenced = set(open_table(quarry_env, "orders").file_uris())
    _sync_in_pages(quarry_env, "st_a", 2, start=100)

    # Retention 0 is for tests only: every removed file is past it.
    maintain(quarry_env, "orders", registry=registry, retention_hours=0)
    assert referenced <= _parquet_files(quarry_env, "orders")

    record_snapshot(registry, "st_a", current_versions(quarry_env, ["orders"]))
    maintain(quarry_env, "orders", registry=registry, retention_hours=0)
    assert _parquet_files(quarry_env, "orders") == set(open_table(quarry_env, "orders").file_uris())
    assert not referenced & _parquet_files(quarry_env, "orders")


def test_checkpoint_is_written_when_due(quarry_env: Settings, registry: Registry) -> None:
    _sync_in_pages(quarry_env, "st_a", 2)
    assert last_checkpoint(quarry_env, "orders") is None

    not_due = maintain(quarry_env, "orders", registry=registry, checkpoint_every=50)
    due = maintain(quarry_env, "orders", registry=registry, checkpoint_every=2)

    assert not_due.checkpoint_version is None
    assert due.checkpoint_version == last_checkpoint(quarry_env, "orders")
    assert due.checkpoint_version is not None and due.checkpoint_version >= 2
    log = Path(table_path(quarry_env, "orders") / "_delta_log")
    assert (log / f"{due.checkpoint_version:020d}.checkpoint.parquet").exists()


def test_retention_below_an_hour_is_refused(quarry_env: Settings, registry: Registry) -> None:
    settings = quarry_env.model_copy(update={"vacuum_retention_hours": 0})
    with pytest.raises(ConfigurationError, match="QUARRY_VACUUM_RETENTION_HOURS"):
        maintain(settings, "orders", registry=registry)


def _file_ranges(settings: Settings, table: str, store: str, key: str) -> dict[str, tuple]:
    """Each file of the store's partition: (min, max) of `key` from its Delta statistics."""
    actions = pa.table(open_table(settings, table).get_add_actions(flatten=True))
    rows = actions.filter(pc.equal(actions["partition.store_id"], store)).to_pylist()
    return {r["path"]: (r[f"min.{key}"], r[f"max.{key}"]) for r in rows}


def test_compaction_clusters_a_full_sync_so_a_recent_change_rewrites_one_file(
    quarry_env: Settings, registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Files of 100 rows, and every page file counts as small.
    monkeypatch.setattr(rewrite, "_rows_per_file", lambda files: 100)
    monkeypatch.setattr(rewrite, "SMALL_FILE_BYTES", 1 << 40)
    writer = StoreWriter(quarry_env, "st_a")
    # Pages interleave creation times (every tenth order), as a sync by update time would.
    for page in range(10):
        numbers = range(1000 + page, 1500, 10)
        writer.apply(orders_page("st_a", numbers), full=True, first=page == 0)
    for table in ("orders", "order_lines"):
        maintain(quarry_env, table, "st_a", registry=registry)
    before = current_rows(quarry_env, "orders")

    orders = sorted(_file_ranges(quarry_env, "orders", "st_a", "id").values())
    assert orders == [(f"st_a-o{n}", f"st_a-o{n + 99}") for n in range(1000, 1500, 100)]
    lines = sorted(_file_ranges(quarry_env, "order_lines", "st_a", "order_id").values())
    assert lines == [(f"st_a-o{n}", f"st_a-o{n + 49}") for n in range(1000, 1500, 50)]

    # Statistics rule out every file but the newest before any is opened.
    opened: list[str] = []
    holding = rewrite._holding

    def spy(root: Path, files: list, key: str, value_set: pa.Array) -> list:
        opened.extend(f["path"] for f in files)
        return holding(root, files, key, value_set)

    monkeypatch.setattr(rewrite, "_holding", spy)
    files_before = set(_file_ranges(quarry_env, "orders", "st_a", "id"))
    StoreWriter(quarry_env, "st_a").apply(
        orders_page("st_a", [1498, 1499, 1500], version=1), full=False, first=False
    )
    files_after = set(_file_ranges(quarry_env, "orders", "st_a", "id"))
    assert len(files_before - files_after) == 1
    assert len(opened) == 2  # the newest file of orders, and of order_lines
    after = {r["id"]: r for r in current_rows(quarry_env, "orders")}
    assert {r["id"]: r for r in before if r["id"] not in after} == {}
    assert after["st_a-o1499"]["tags"] == "v1"
    assert after["st_a-o1500"]["tags"] == "v1"
    assert after["st_a-o1000"] == next(r for r in before if r["id"] == "st_a-o1000")
