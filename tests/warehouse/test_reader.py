"""The reader shows exactly the published snapshot of the requested stores, with exact types."""

from __future__ import annotations

import threading
from datetime import date, timedelta
from decimal import Decimal

from quarry.settings import Settings
from registry.db import Registry
from tests.warehouse.conftest import fetch_dicts, orders_page, publish, rows_table
from warehouse.lake import Lake
from warehouse.maintenance import maintain
from warehouse.reader import WarehouseReader, scan_versions, unchanged_until
from warehouse.schemas import TABLES
from warehouse.snapshots import record_snapshot
from warehouse.tables import duckdb_type
from warehouse.writer import StoreWriter, upsert_rows

ORDER_TABLES = ["orders", "order_lines"]


def _sync(
    lake: Lake,
    registry: Registry,
    store: str,
    numbers: list[int],
    *,
    version: int = 0,
    full: bool = False,
) -> None:
    """Apply a page and record the store's snapshot, as a sync does."""
    page = orders_page(store, numbers, version)
    StoreWriter(lake, store).apply(page, full=full, first=full)
    publish(lake, registry, store)


def _counts(reader: WarehouseReader, stores: list[str]) -> dict[str, int]:
    with reader.read(stores) as cursor:
        return {
            t: cursor.execute(f"SELECT count(*) FROM {t}").fetchone()[0]  # type: ignore[index]
            for t in ORDER_TABLES
        }


def test_reads_the_recorded_versions_not_newer_commits(
    lake: Lake, registry: Registry, reader: WarehouseReader
) -> None:
    _sync(lake, registry, "st_a", [1, 2, 3], full=True)
    # A sync in progress: committed, not recorded.
    StoreWriter(lake, "st_a").apply(orders_page("st_a", [4, 5], version=1), full=False, first=False)

    assert _counts(reader, ["st_a"]) == {"orders": 3, "order_lines": 6}
    with reader.read(["st_a"]) as cursor:
        assert {r["tags"] for r in fetch_dicts(cursor, "SELECT tags FROM orders")} == {"v0"}

    publish(lake, registry, "st_a")
    assert _counts(reader, ["st_a"]) == {"orders": 5, "order_lines": 10}


def test_two_stores_at_different_versions(
    lake: Lake, registry: Registry, reader: WarehouseReader
) -> None:
    _sync(lake, registry, "st_a", [1, 2], full=True)
    _sync(lake, registry, "st_b", [1, 2, 3], full=True)
    _sync(lake, registry, "st_a", [3], version=1)
    # st_b's newer commit is not recorded; st_a's snapshot is newer than st_b's.
    StoreWriter(lake, "st_b").apply(orders_page("st_b", [9], version=2), full=False, first=False)

    with reader.read(["st_a", "st_b"]) as cursor:
        rows = fetch_dicts(cursor, "SELECT store_id, count(*) AS n FROM orders GROUP BY 1")
        lines = cursor.execute("SELECT count(*) FROM order_lines").fetchone()
    assert rows == [{"store_id": "st_a", "n": 3}, {"store_id": "st_b", "n": 3}]
    assert lines == (12,)
    assert _counts(reader, ["st_b"]) == {"orders": 3, "order_lines": 6}


def test_stores_without_a_snapshot_contribute_nothing(
    lake: Lake, registry: Registry, reader: WarehouseReader
) -> None:
    _sync(lake, registry, "st_a", [1], full=True)
    StoreWriter(lake, "st_b").apply(orders_page("st_b", [1, 2]), full=True, first=True)

    assert _counts(reader, ["st_b"]) == {"orders": 0, "order_lines": 0}
    assert _counts(reader, ["st_a", "st_b"]) == {"orders": 1, "order_lines": 2}
    assert _counts(reader, []) == {"orders": 0, "order_lines": 0}


def test_every_table_is_queryable_with_exact_types_before_any_sync(
    reader: WarehouseReader,
) -> None:
    with reader.read(["st_a"]) as cursor:
        for name, table in TABLES.items():
            described = cursor.execute(f"DESCRIBE {name}").fetchall()
            assert [(r[0], r[1]) for r in described] == [
                (f.name, duckdb_type(f.type)) for f in table.schema
            ], name
            assert cursor.execute(f"SELECT count(*) FROM {name}").fetchone() == (0,)


def test_money_and_time_types_are_exact_and_utc(
    lake: Lake, registry: Registry, reader: WarehouseReader
) -> None:
    _sync(lake, registry, "st_a", [1], full=True)
    with reader.read(["st_a"]) as cursor:
        row = fetch_dicts(
            cursor,
            "SELECT typeof(total_price) AS money, typeof(created_at) AS ts, total_price,"
            " created_at::VARCHAR AS shown, current_setting('TimeZone') AS zone FROM orders",
        )[0]
    assert row["money"] == "DECIMAL(18,2)"
    assert row["ts"] == "TIMESTAMP WITH TIME ZONE"
    assert row["total_price"] == Decimal("1.00")
    assert row["shown"] == "2024-01-01 00:01:00+00"
    assert row["zone"] == "UTC"


def test_exchange_rates_use_the_highest_recorded_version(
    lake: Lake, registry: Registry, reader: WarehouseReader
) -> None:
    def rates(day: int) -> None:
        row = {"date": date(2024, 1, day), "base": "USD", "currency": "EUR", "rate": Decimal(1)}
        upsert_rows(lake, "exchange_rates", rows_table("exchange_rates", [row]))

    rates(1)
    publish(lake, registry, "st_a")
    rates(2)
    publish(lake, registry, "st_b")
    rates(3)

    def count(stores: list[str]) -> int:
        with reader.read(stores) as cursor:
            return cursor.execute("SELECT count(*) FROM exchange_rates").fetchone()[0]  # type: ignore[index]

    assert count(["st_a"]) == 1
    assert count(["st_a", "st_b"]) == 2
    assert count([]) == 0


def test_snapshot_key_changes_exactly_with_the_versions(
    lake: Lake, registry: Registry, reader: WarehouseReader
) -> None:
    _sync(lake, registry, "st_a", [1], full=True)
    first = reader.snapshot(["st_a", "st_b"])
    assert reader.snapshot(["st_b", "st_a"]).key == first.key
    record_snapshot(registry, "st_b", 0)
    assert reader.snapshot(["st_a", "st_b"]).key != first.key
    assert reader.snapshot(["st_a"]).key == reader.snapshot(["st_a"]).key


def test_threads_reading_different_snapshots_see_their_own(
    quarry_env: Settings, lake: Lake, registry: Registry
) -> None:
    _sync(lake, registry, "st_a", [1], full=True)
    _sync(lake, registry, "st_b", [1, 2, 3], full=True)
    reader = WarehouseReader(quarry_env, registry, max_cached_snapshots=1)
    expected = {"st_a": 1, "st_b": 3}
    wrong: list[tuple[str, int]] = []

    def read(store: str) -> None:
        for _ in range(30):
            with reader.read([store]) as cursor:
                count = cursor.execute("SELECT count(*) FROM orders").fetchone()[0]  # type: ignore[index]
            if count != expected[store]:
                wrong.append((store, count))

    threads = [threading.Thread(target=read, args=(s,)) for s in ("st_a", "st_b") * 3]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    reader.close()
    assert wrong == []


def test_a_cursor_asking_for_some_tables_gets_their_views_and_later_the_rest(
    lake: Lake, registry: Registry, reader: WarehouseReader
) -> None:
    _sync(lake, registry, "st_a", [1, 2], full=True)
    snapshot = reader.snapshot(["st_a"])
    with reader.connect(snapshot, {"orders"}) as cursor:
        assert cursor.execute("SELECT count(*) FROM orders").fetchall() == [(2,)]
        views = cursor.execute(
            "SELECT view_name FROM duckdb_views() WHERE schema_name = current_schema()"
        ).fetchall()
        assert views == [("orders",)]
    with reader.connect(snapshot) as cursor:
        assert cursor.execute("SELECT count(*) FROM order_lines").fetchall() == [(4,)]
        views = cursor.execute(
            "SELECT count(*) FROM duckdb_views() WHERE schema_name = current_schema()"
        ).fetchall()
        assert views == [(len(TABLES),)]


def test_stores_unchanged_since_their_version_are_read_at_the_newest(
    lake: Lake, registry: Registry, reader: WarehouseReader
) -> None:
    _sync(lake, registry, "st_a", [1, 2], full=True)
    _sync(lake, registry, "st_b", [1, 2, 3], full=True)
    snapshot = reader.snapshot(["st_a", "st_b"])
    assert snapshot.versions["st_a"] < snapshot.versions["st_b"]

    cursor = lake.cursor()
    assert scan_versions(cursor, snapshot) == dict.fromkeys(["st_a", "st_b"], lake.version())
    cursor.close()
    assert _counts(reader, ["st_a", "st_b"]) == {"orders": 5, "order_lines": 10}


def test_a_range_starts_at_the_stores_last_version_with_the_same_rows(
    lake: Lake, registry: Registry
) -> None:
    """unchanged_until moves a store's start past the other stores' writes, up to its own
    next one: what a changed-rows run reads from."""
    _sync(lake, registry, "st_a", [1, 2], full=True)
    a_start = lake.version()
    _sync(lake, registry, "st_b", [1, 2, 3], full=True)
    _sync(lake, registry, "st_b", [4])
    b_write = lake.version()
    _sync(lake, registry, "st_a", [3])
    end = lake.version()

    cursor = lake.cursor()
    try:
        moved = unchanged_until(
            cursor, {"st_a": (a_start, end), "st_b": (a_start, end), "st_c": (end, end)}
        )
    finally:
        cursor.close()
    # st_a: its rows are those of its start until its own write at the end.
    assert a_start < moved["st_a"] < end and moved["st_a"] >= b_write
    # st_b wrote right after st_a's start: it keeps it; an empty range stays as it is.
    assert moved["st_b"] == a_start and moved["st_c"] == end
    rows = {
        v: lake.cursor()
        .execute(
            f"SELECT id FROM lake.orders AT (VERSION => {v}) WHERE store_id = 'st_a' ORDER BY id"
        )
        .fetchall()
        for v in (a_start, moved["st_a"])
    }
    assert rows[a_start] == rows[moved["st_a"]]


def test_a_store_with_unpublished_commits_keeps_its_version_even_once_they_expire(
    lake: Lake, registry: Registry, reader: WarehouseReader
) -> None:
    _sync(lake, registry, "st_a", [1, 2], full=True)
    # A sync of st_a that failed before publishing, then st_b's published sync.
    StoreWriter(lake, "st_a").apply(orders_page("st_a", [7], version=1), full=False, first=False)
    _sync(lake, registry, "st_b", [1], full=True)
    # The failed sync's snapshot is in use by nobody: maintenance expires it.
    maintain(lake, registry, retention=timedelta(0))

    snapshot = reader.snapshot(["st_a", "st_b"])
    cursor = lake.cursor()
    assert scan_versions(cursor, snapshot)["st_a"] == snapshot.versions["st_a"]
    cursor.close()
    with reader.connect(snapshot) as cursor:
        assert fetch_dicts(cursor, "SELECT id FROM orders WHERE store_id = 'st_a'") == [
            {"id": "st_a-o1"},
            {"id": "st_a-o2"},
        ]
