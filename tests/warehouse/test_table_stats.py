"""Table facts for asset metadata and checks: store_row_count reads the per-file row counts
of the Delta log (the Parquet footers for a file added without them); key_health counts
duplicate and null keys of one store's partition."""

from __future__ import annotations

import time

import pyarrow as pa
import pyarrow.parquet as pq
from deltalake import write_deltalake
from deltalake.transaction import AddAction

from pipelines.sync.table_stats import key_health, store_row_count
from quarry.settings import Settings
from tests.warehouse.conftest import line_rows, orders_page
from warehouse.tables import open_table, table_path
from warehouse.writer import StoreWriter


def test_counts_rows_per_store_and_in_all(quarry_env: Settings) -> None:
    StoreWriter(quarry_env, "st_a").apply(orders_page("st_a", range(5)), full=True, first=True)
    StoreWriter(quarry_env, "st_b").apply(orders_page("st_b", range(3)), full=True, first=True)
    StoreWriter(quarry_env, "st_b").apply(orders_page("st_b", range(3, 7), 1), full=False,
                                          first=True)  # fmt: skip

    assert store_row_count(quarry_env, "orders", "st_a") == 5
    assert store_row_count(quarry_env, "orders", "st_b") == 7
    assert store_row_count(quarry_env, "order_lines", "st_b") == 14
    assert store_row_count(quarry_env, "orders", None) == 12
    assert store_row_count(quarry_env, "orders", "st_none") == 0


def test_a_file_without_a_row_count_is_counted_from_its_footer(quarry_env: Settings) -> None:
    StoreWriter(quarry_env, "st_a").apply(orders_page("st_a", range(5)), full=True, first=True)
    delta = open_table(quarry_env, "orders")
    # A file as a tool that writes no statistics would add it: no numRecords in the log.
    source = table_path(quarry_env, "orders") / delta.file_uris()[0].split("/orders/", 1)[1]
    relative = "store_id=st_a/part-00000-nostats-c000.snappy.parquet"
    target = table_path(quarry_env, "orders") / relative
    pq.write_table(pq.read_table(source).slice(0, 2), target)
    add = AddAction(relative, target.stat().st_size, {"store_id": "st_a"},
                    int(time.time() * 1000), True, None)  # fmt: skip
    delta.create_write_transaction([add], "append", delta.schema(),
                                   partition_by=["store_id"])  # fmt: skip

    assert store_row_count(quarry_env, "orders", "st_a") == 7


def test_key_health_counts_duplicate_and_null_keys_of_one_store(quarry_env: Settings) -> None:
    StoreWriter(quarry_env, "st_a").apply(orders_page("st_a", range(3)), full=True, first=True)
    StoreWriter(quarry_env, "st_b").apply(orders_page("st_b", range(2)), full=True, first=True)
    clean = key_health(quarry_env, "order_lines", "st_a")
    assert (clean.rows, clean.duplicate_keys, clean.null_keys) == (6, 0, 0)

    lines = line_rows("st_a", [0, 1], per_order=1)  # ids st_a-l0-0 and st_a-l1-0 again
    orphan = lines.set_column(
        lines.schema.get_field_index("order_id"), "order_id", pa.array([None, "st_a-o1"])
    )
    write_deltalake(str(table_path(quarry_env, "order_lines")), orphan, mode="append")

    health = key_health(quarry_env, "order_lines", "st_a")
    assert (health.rows, health.duplicate_keys, health.null_keys) == (8, 2, 1)
    other = key_health(quarry_env, "order_lines", "st_b")
    assert (other.rows, other.duplicate_keys, other.null_keys) == (4, 0, 0)
