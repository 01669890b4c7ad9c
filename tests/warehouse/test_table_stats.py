"""Table facts for asset metadata and checks, counted by DuckLake: store_row_count counts
inlined rows and rows behind delete files as readers see them; key_health counts duplicate
and null keys of one store's rows."""

from __future__ import annotations

import pyarrow as pa

from pipelines.sync.table_stats import key_health, store_row_count
from tests.warehouse.conftest import line_rows, orders_page
from warehouse.lake import Lake
from warehouse.writer import StoreWriter


def test_counts_rows_per_store_and_in_all(lake: Lake) -> None:
    StoreWriter(lake, "st_a").apply(orders_page("st_a", range(5)), full=True, first=True)
    StoreWriter(lake, "st_b").apply(orders_page("st_b", range(3)), full=True, first=True)
    StoreWriter(lake, "st_b").apply(orders_page("st_b", range(3, 7), 1), full=False,
                                    first=True)  # fmt: skip

    assert store_row_count(lake, "orders", "st_a") == 5
    assert store_row_count(lake, "orders", "st_b") == 7
    assert store_row_count(lake, "order_lines", "st_b") == 14
    assert store_row_count(lake, "orders", None) == 12
    assert store_row_count(lake, "orders", "st_none") == 0


def test_inlined_rows_and_deletes_from_files_count_as_readers_see_them(lake: Lake) -> None:
    # 2,000 rows go to a Parquet file; the later small changes are inlined in the catalog,
    # and the deletion of rows of that file is a delete (inlined or a delete file).
    StoreWriter(lake, "st_a").apply(orders_page("st_a", range(2000)), full=True, first=True)
    StoreWriter(lake, "st_a").apply(
        orders_page("st_a", [2000, 2001], 1, deleted=[0, 1, 2]), full=False, first=False
    )

    assert store_row_count(lake, "orders", "st_a") == 1999
    assert store_row_count(lake, "order_lines", "st_a") == 3998


def _add_bad_lines(lake: Lake, orders: list[int]) -> None:
    """Store st_a's first line of each of `orders` again, the first of them without its
    order id: written behind the writer's back, as a broken tool would."""
    lines = line_rows("st_a", orders, per_order=1)
    parents = [None, *(f"st_a-o{n}" for n in orders[1:])]
    bad = lines.set_column(
        lines.schema.get_field_index("order_id"), "order_id", pa.array(parents, pa.string())
    )
    cursor = lake.cursor()
    cursor.register("bad_lines", bad)
    cursor.execute("INSERT INTO lake.order_lines SELECT * FROM bad_lines")
    cursor.close()


def test_key_health_counts_duplicate_and_null_keys_of_one_store(lake: Lake) -> None:
    StoreWriter(lake, "st_a").apply(orders_page("st_a", range(3)), full=True, first=True)
    StoreWriter(lake, "st_b").apply(orders_page("st_b", range(2)), full=True, first=True)
    clean = key_health(lake, "order_lines", "st_a")
    assert (clean.rows, clean.duplicate_keys, clean.null_keys) == (6, 0, 0)

    _add_bad_lines(lake, [0, 1])  # ids st_a-l0-0 and st_a-l1-0 again, one without order

    health = key_health(lake, "order_lines", "st_a")
    assert (health.rows, health.duplicate_keys, health.null_keys) == (8, 2, 1)
    other = key_health(lake, "order_lines", "st_b")
    assert (other.rows, other.duplicate_keys, other.null_keys) == (4, 0, 0)


def test_key_health_since_a_version_finds_duplicates_among_keys_inserted_after_it(
    lake: Lake,
) -> None:
    StoreWriter(lake, "st_a").apply(orders_page("st_a", range(3)), full=True, first=True)
    StoreWriter(lake, "st_b").apply(orders_page("st_b", range(2)), full=True, first=True)
    checked = lake.version()
    assert key_health(lake, "order_lines", "st_a", since=checked) == key_health(
        lake, "order_lines", "st_a"
    )
    # An incremental page replaces order 1's lines and adds order 3: no duplicates.
    StoreWriter(lake, "st_a").apply(orders_page("st_a", [1, 3], 1), full=False, first=True)
    clean = key_health(lake, "order_lines", "st_a", since=checked)
    assert (clean.rows, clean.duplicate_keys, clean.null_keys) == (8, 0, 0)

    _add_bad_lines(lake, [0, 3])  # ids st_a-l0-0 and st_a-l3-0 again, one without order

    since = key_health(lake, "order_lines", "st_a", since=checked)
    whole = key_health(lake, "order_lines", "st_a")
    assert (since.rows, since.duplicate_keys, since.null_keys) == (10, 2, 1)
    assert since == whole
    # Another store's insertions are not this store's.
    other = key_health(lake, "order_lines", "st_b", since=checked)
    assert (other.rows, other.duplicate_keys, other.null_keys) == (4, 0, 0)
    # Rows inserted after the version and deleted again are not the table's any more.
    cursor = lake.cursor()
    cursor.execute("DELETE FROM lake.order_lines WHERE order_id IS NULL")
    cursor.close()
    repaired = key_health(lake, "order_lines", "st_a", since=checked)
    assert (repaired.rows, repaired.duplicate_keys, repaired.null_keys) == (9, 1, 0)
