"""Table creation and table-wide helpers."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest

from quarry.settings import Settings
from tests.concurrency import errors_in_threads
from tests.warehouse.conftest import current_rows, orders_page
from warehouse import lake as lake_module
from warehouse.lake import Lake, connect, write_lock
from warehouse.schemas import TABLES
from warehouse.tables import (
    clustering_key,
    duckdb_type,
    qualified,
    select_columns,
    sort_key,
    store_predicate,
)
from warehouse.writer import StoreWriter


def _columns(lake: Lake) -> dict[str, list[tuple[str, str]]]:
    cursor = lake.cursor()
    try:
        rows = cursor.execute(
            "SELECT table_name, column_name, data_type FROM duckdb_columns() "
            "WHERE database_name = 'lake' ORDER BY table_name, column_index"
        ).fetchall()
    finally:
        cursor.close()
    out: dict[str, list[tuple[str, str]]] = {}
    for table, column, data_type in rows:
        out.setdefault(table, []).append((column, data_type))
    return out


def test_racing_first_attaches_create_each_table_once(quarry_env: Settings) -> None:
    assert errors_in_threads(lambda: connect(quarry_env).close(), 4) == []
    lake = Lake(quarry_env)
    try:
        cursor = lake.cursor()
        created = cursor.execute(
            "SELECT count(*) FROM lake.snapshots() WHERE changes['tables_created'] IS NOT NULL"
        ).fetchone()
        cursor.close()
        assert created == (1,)
        assert sorted(_columns(lake)) == sorted(TABLES)
    finally:
        lake.close()


_META = "__ducklake_metadata_lake"


def _partitioned(lake: Lake) -> set[str]:
    cursor = lake.cursor()
    try:
        return {
            name
            for (name,) in cursor.execute(
                f"SELECT t.table_name FROM {_META}.ducklake_partition_info p "
                f"JOIN {_META}.ducklake_partition_column c USING (partition_id, table_id) "
                f"JOIN {_META}.ducklake_table t USING (table_id) "
                "WHERE p.end_snapshot IS NULL AND t.end_snapshot IS NULL"
            ).fetchall()
        }
    finally:
        cursor.close()


def _sorted_by(lake: Lake) -> dict[str, tuple[str, ...]]:
    cursor = lake.cursor()
    try:
        rows = cursor.execute(
            f"SELECT t.table_name, e.expression FROM {_META}.ducklake_sort_info s "
            f"JOIN {_META}.ducklake_sort_expression e USING (sort_id, table_id) "
            f"JOIN {_META}.ducklake_table t USING (table_id) "
            "WHERE s.end_snapshot IS NULL AND t.end_snapshot IS NULL "
            "ORDER BY t.table_name, e.sort_key_index"
        ).fetchall()
    finally:
        cursor.close()
    out: dict[str, tuple[str, ...]] = {}
    for table, expression in rows:
        out[table] = (*out.get(table, ()), expression.strip('"'))
    return out


def test_tables_have_their_schema_and_are_sorted_by_store(lake: Lake) -> None:
    columns = _columns(lake)
    for name, spec in TABLES.items():
        assert columns[name] == [(f.name, duckdb_type(f.type)) for f in spec.schema], name
    # Not partitioned: a partition per store made every statement read every store's files.
    assert _partitioned(lake) == set()
    assert _sorted_by(lake) == {
        name: sort_key(name) for name, spec in TABLES.items() if spec.per_store
    }
    assert sort_key("orders") == ("store_id", "created_at", "id")
    assert sort_key("order_lines") == ("store_id", "order_id", "id")
    assert sort_key("sales_rollup_days")[:3] == ("store_id", "currency", "store_date")


def test_a_table_partitioned_by_an_earlier_quarry_is_made_sorted(quarry_env: Settings) -> None:
    lake = Lake(quarry_env)
    cursor = lake.cursor()
    cursor.execute("ALTER TABLE lake.orders RESET SORTED BY")
    cursor.execute("ALTER TABLE lake.orders SET PARTITIONED BY (store_id)")
    cursor.execute(
        f"INSERT INTO lake.orders ({select_columns('orders')}) "
        f"SELECT {', '.join(_old_row(f.name) for f in TABLES['orders'].schema)}"
    )
    cursor.close()
    assert _partitioned(lake) == {"orders"}
    lake.close()

    reopened = Lake(quarry_env)
    try:
        assert _partitioned(reopened) == set()
        assert _sorted_by(reopened)["orders"] == ("store_id", "created_at", "id")
        cursor = reopened.cursor()
        # The row written under the partitioning is still read.
        assert cursor.execute("SELECT store_id, id FROM lake.orders").fetchall() == [
            ("st_old", "o1")
        ]
        cursor.close()
    finally:
        reopened.close()


def _old_row(column: str) -> str:
    return {"store_id": "'st_old'", "id": "'o1'"}.get(column, "NULL")


def test_a_column_added_to_a_spec_is_added_to_the_table(quarry_env: Settings) -> None:
    lake = Lake(quarry_env)
    cursor = lake.cursor()
    cursor.execute("ALTER TABLE lake.orders DROP COLUMN tags")
    cursor.close()
    lake.close()

    reopened = Lake(quarry_env)
    try:
        assert ("tags", "VARCHAR") in _columns(reopened)["orders"]
    finally:
        reopened.close()


def test_store_ids_are_checked_before_they_reach_sql() -> None:
    assert store_predicate("st_a1", "t") == "t.store_id = 'st_a1'"
    for bad in ("st_a' OR '1'='1", "ST_A", "", "st-a"):
        with pytest.raises(ValueError):
            store_predicate(bad)
    with pytest.raises(KeyError, match="not a warehouse table"):
        qualified("ordres")


def test_clustering_keys_put_parents_by_creation_and_children_by_parent() -> None:
    assert clustering_key("orders") == ("created_at", "id")
    assert clustering_key("customers") == ("created_at", "id")
    assert clustering_key("order_lines") == ("order_id", "id")
    assert clustering_key("sales") == ("order_id", "id")
    assert clustering_key("product_variants") == ("product_id", "id")
    assert clustering_key("exchange_rates") == ("date", "base", "currency")


def test_a_reader_attaches_while_a_writer_holds_the_lock(quarry_env: Settings) -> None:
    Lake(quarry_env).connection.close()  # the catalog and its tables exist
    attached = threading.Event()

    def attach() -> None:
        connect(quarry_env).close()
        attached.set()

    with write_lock(quarry_env):
        reader = threading.Thread(target=attach)
        reader.start()
        # Readers never wait for a writer's transaction (it may last seconds).
        assert attached.wait(30)
    reader.join()


def test_the_write_lock_is_reentrant_in_its_own_thread_only(
    quarry_env: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lake_module, "LOCK_TIMEOUT_SECONDS", 5.0)  # a wait fails, not hangs
    Lake(quarry_env).connection.close()
    entered = threading.Event()

    def write() -> None:
        with write_lock(quarry_env):
            entered.set()

    with write_lock(quarry_env):
        with write_lock(quarry_env):  # the thread that holds it goes on
            pass
        other = threading.Thread(target=write)
        other.start()
        assert not entered.wait(1.0)  # another thread waits for it
    assert entered.wait(30)
    other.join()


def test_a_home_moved_elsewhere_reads_its_own_data(quarry_env: Settings, tmp_path: Path) -> None:
    lake = Lake(quarry_env)
    StoreWriter(lake, "st_a").apply(orders_page("st_a", range(3000)), full=True, first=True)
    lake.close()
    moved = tmp_path / "moved-home"
    shutil.move(quarry_env.home, moved)

    again = Lake(quarry_env.model_copy(update={"home": moved}))
    try:
        assert len(current_rows(again, "orders", "st_a")) == 3000
    finally:
        again.close()
