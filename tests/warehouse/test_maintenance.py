"""Lake maintenance: small writes are folded into files, snapshots nobody reads expire
with their files, and a snapshot somebody reads (published, recently replaced, pinned by an
export) survives every pass with exact figures."""

from __future__ import annotations

import threading
from datetime import timedelta
from pathlib import Path

import duckdb
import pytest

from registry.db import Registry
from tests.warehouse.conftest import current_rows, orders_page, publish
from warehouse.lake import Lake
from warehouse.maintenance import maintain
from warehouse.reader import WarehouseReader
from warehouse.writer import StoreWriter

NO_RETENTION = timedelta(0)


def _files(lake: Lake) -> set[Path]:
    return set(Path(lake.settings.resolved_data_url).rglob("*.parquet"))


def _snapshot_ids(lake: Lake) -> set[int]:
    cursor = lake.cursor()
    try:
        return {v for (v,) in cursor.execute("SELECT snapshot_id FROM lake.snapshots()").fetchall()}
    finally:
        cursor.close()


def _inlined_commits(lake: Lake) -> int:
    """Commits that wrote rows into the catalog rather than into files."""
    cursor = lake.cursor()
    try:
        changes = cursor.execute("SELECT changes FROM lake.snapshots()").fetchall()
    finally:
        cursor.close()
    return sum(1 for (change,) in changes if "inlined_insert" in change)


def test_small_writes_are_folded_into_files_and_rows_stay_exact(
    lake: Lake, registry: Registry
) -> None:
    writer = StoreWriter(lake, "st_a")
    writer.apply(orders_page("st_a", range(3)), full=True, first=True)
    for version in range(1, 6):
        writer.apply(orders_page("st_a", [version], version), full=False, first=False)
    publish(lake, registry, "st_a")
    before = {t: current_rows(lake, t) for t in ("orders", "order_lines")}
    assert _inlined_commits(lake) == 6

    result = maintain(lake, registry, retention=NO_RETENTION)

    # Every inlined order and line that is still live (8 orders, 16 lines) went to files.
    assert result.inlined_rows_flushed == 8 + 16
    assert maintain(lake, registry, retention=NO_RETENTION).inlined_rows_flushed == 0
    assert {t: current_rows(lake, t) for t in before} == before


def test_expiry_keeps_published_and_pinned_snapshots_only(
    lake: Lake, registry: Registry, reader: WarehouseReader
) -> None:
    big = range(5000)  # large enough to be written as Parquet files, not inlined
    StoreWriter(lake, "st_a").apply(orders_page("st_a", big), full=True, first=True)
    first = publish(lake, registry, "st_a")
    StoreWriter(lake, "st_a").apply(orders_page("st_a", big, 1), full=True, first=True)
    second = publish(lake, registry, "st_a")
    StoreWriter(lake, "st_b").apply(orders_page("st_b", big), full=True, first=True)
    published_b = publish(lake, registry, "st_b")
    StoreWriter(lake, "st_a").apply(orders_page("st_a", big, 2), full=True, first=True)
    unpublished = lake.version()
    files_before = _files(lake)

    with reader.pinned(["st_a"]) as pinned:
        assert pinned.versions == {"st_a": second}
        result = maintain(lake, registry, retention=NO_RETENTION)
        kept = _snapshot_ids(lake)
        # The newest snapshot always stays (the pass's merges may add one after the
        # unpublished write: stores share files); st_a's first publication, replaced and
        # with no grace period, is gone, and so are the files only it used.
        assert {second, published_b, lake.version()} <= kept
        assert lake.version() >= unpublished
        assert first not in kept
        assert result.snapshots_expired > 0
        assert result.files_deleted > 0
        assert files_before - _files(lake)  # files only expired snapshots used
        newest = lake.cursor()
        assert newest.execute(
            "SELECT store_id, list(DISTINCT tags), count(*) FROM lake.orders GROUP BY 1 ORDER BY 1"
        ).fetchall() == [("st_a", ["v2"], 5000), ("st_b", ["v0"], 5000)]
        newest.close()
        with reader.connect(pinned) as cursor:
            tags = cursor.execute("SELECT list(DISTINCT tags), count(*) FROM orders").fetchone()
        assert tags == (["v1"], 5000)

    # Released: the pinned snapshot is now only a replaced one... still st_a's published.
    maintain(lake, registry, retention=NO_RETENTION)
    assert second in _snapshot_ids(lake)
    cursor = lake.cursor()
    with pytest.raises(duckdb.Error, match=r"(?i)snapshot"):
        cursor.execute(f"SELECT count(*) FROM lake.orders AT (VERSION => {first})").fetchall()
    cursor.close()


def test_a_recently_replaced_snapshot_survives_the_retention(
    lake: Lake, registry: Registry
) -> None:
    StoreWriter(lake, "st_a").apply(orders_page("st_a", range(10)), full=True, first=True)
    first = publish(lake, registry, "st_a")
    StoreWriter(lake, "st_a").apply(orders_page("st_a", range(10), 1), full=True, first=True)
    publish(lake, registry, "st_a")

    maintain(lake, registry, retention=timedelta(hours=1))

    # A request that looked st_a up just before the second publication still reads `first`.
    assert first in _snapshot_ids(lake)
    assert len(current_rows(lake, "orders", "st_a", version=first)) == 10


def test_an_export_reading_while_maintenance_runs_sees_exact_figures(
    lake: Lake, registry: Registry, reader: WarehouseReader
) -> None:
    StoreWriter(lake, "st_a").apply(orders_page("st_a", range(4000)), full=True, first=True)
    publish(lake, registry, "st_a")
    expected = sum(n for n in range(4000))  # total_price of order n is n

    failures: list[str] = []
    totals: list[object] = []
    started = threading.Event()

    def export() -> None:
        try:
            with reader.pinned(["st_a"]) as snapshot, reader.connect(snapshot) as cursor:
                for _ in range(30):
                    started.set()
                    totals.append(cursor.execute("SELECT sum(total_price) FROM orders").fetchone())
        except Exception as exc:  # every failure is a finding
            failures.append(repr(exc))
        finally:
            started.set()

    thread = threading.Thread(target=export)
    thread.start()
    started.wait(30)
    # Meanwhile: syncs replace the store's rows and publish, and maintenance expires
    # everything that is not in use, with no retention at all.
    for version in range(1, 4):
        writer = StoreWriter(lake, "st_a")
        writer.apply(orders_page("st_a", range(4000), version), full=True, first=True)
        publish(lake, registry, "st_a")
        maintain(lake, registry, retention=NO_RETENTION)
    thread.join(60)

    assert failures == []
    assert totals and all(total == (expected,) for total in totals)


def test_a_replaced_delete_file_outlives_the_retention_before_it_is_deleted(
    lake: Lake, registry: Registry
) -> None:
    """Flushing a few deletes kept in the catalog into a file's delete file replaces that
    delete file, which DuckLake schedules for deletion at once: a reader that listed it
    before the pass would then fail to open it. It stays on disk for the retention."""
    StoreWriter(lake, "st_a").apply(orders_page("st_a", range(2000)), full=True, first=True)
    # Many deletes of the file: a delete file. Then a few more: kept in the catalog.
    StoreWriter(lake, "st_a").apply(
        orders_page("st_a", [], deleted=range(100, 300)), full=False, first=True
    )
    StoreWriter(lake, "st_a").apply(
        orders_page("st_a", [], deleted=range(500, 503)), full=False, first=True
    )
    publish(lake, registry, "st_a")
    delete_files = {p for p in _files(lake) if p.name.endswith("-delete.parquet")}
    assert delete_files

    maintain(lake, registry, retention=timedelta(hours=1))
    assert delete_files <= _files(lake)  # replaced, scheduled, kept

    maintain(lake, registry, retention=NO_RETENTION)
    assert not delete_files & _files(lake)  # scheduled longer than the retention: gone
    assert len(current_rows(lake, "orders", "st_a")) == 2000 - 200 - 3
