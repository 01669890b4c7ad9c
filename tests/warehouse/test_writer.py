"""The writer on hand-made pages: full syncs replace one store's partition, incremental
pages upsert parents and replace their children exactly, and nothing is applied twice."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pyarrow as pa
import pytest

from platforms.base import ChangePage
from quarry.settings import Settings
from tests.warehouse.conftest import (
    Row,
    current_rows,
    ids,
    line_rows,
    order_rows,
    orders_page,
    rows_table,
)
from warehouse.rewrite import _may_hold, sort_clustered
from warehouse.tables import delete_store, open_table
from warehouse.writer import StoreWriter, replace_children, upsert_rows


def _orders_by_id(settings: Settings, store: str) -> dict[str, Row]:
    return {row["id"]: row for row in current_rows(settings, "orders", store)}


def test_full_sync_replaces_exactly_that_store(quarry_env: Settings) -> None:
    StoreWriter(quarry_env, "st_a").apply(orders_page("st_a", [1, 2, 3]), full=True, first=True)
    StoreWriter(quarry_env, "st_b").apply(orders_page("st_b", [1, 2]), full=True, first=True)
    before_b = {t: current_rows(quarry_env, t, "st_b") for t in ("orders", "order_lines")}

    written = StoreWriter(quarry_env, "st_a").apply(
        orders_page("st_a", [7, 8], version=1), full=True, first=True
    )

    assert written == {"orders": 2, "order_lines": 4, "refunds": 0, "refund_lines": 0}
    assert ids(current_rows(quarry_env, "orders", "st_a")) == ["st_a-o7", "st_a-o8"]
    lines = current_rows(quarry_env, "order_lines", "st_a")
    assert sorted({row["order_id"] for row in lines}) == ["st_a-o7", "st_a-o8"]
    assert {t: current_rows(quarry_env, t, "st_b") for t in before_b} == before_b


def test_full_sync_first_page_empties_child_tables_it_does_not_carry(
    quarry_env: Settings,
) -> None:
    writer = StoreWriter(quarry_env, "st_a")
    writer.apply(orders_page("st_a", [1, 2]), full=True, first=True)

    writer.apply(ChangePage({"orders": order_rows("st_a", [5])}), full=True, first=True)

    assert ids(current_rows(quarry_env, "orders", "st_a")) == ["st_a-o5"]
    assert current_rows(quarry_env, "order_lines", "st_a") == []


def test_incremental_upserts_replaces_children_and_deletes(quarry_env: Settings) -> None:
    StoreWriter(quarry_env, "st_a").apply(
        orders_page("st_a", [1, 2, 3, 4, 5]), full=True, first=True
    )
    untouched = [r for r in current_rows(quarry_env, "order_lines") if r["order_id"] == "st_a-o1"]
    page = ChangePage(
        {
            # Order 2 changed and lost a line; order 6 is new with three lines.
            "orders": order_rows("st_a", [2, 6], version=1),
            "order_lines": pa.concat_tables(
                [
                    line_rows("st_a", [2], version=1, per_order=1),
                    line_rows("st_a", [6], version=1, per_order=3),
                ]
            ),
        },
        deleted_ids=["st_a-o4"],
    )

    written = StoreWriter(quarry_env, "st_a").apply(page, full=False, first=False)

    assert written == {"orders": 3, "order_lines": 4, "refunds": 0, "refund_lines": 0}
    orders = _orders_by_id(quarry_env, "st_a")
    assert sorted(orders) == ["st_a-o1", "st_a-o2", "st_a-o3", "st_a-o5", "st_a-o6"]
    assert orders["st_a-o2"]["tags"] == "v1"
    assert orders["st_a-o1"]["tags"] == "v0"
    lines = current_rows(quarry_env, "order_lines", "st_a")
    by_order: dict[str, list[str]] = {}
    for row in lines:
        by_order.setdefault(row["order_id"], []).append(row["id"])
    assert sorted(by_order["st_a-o2"]) == ["st_a-l2-0"]
    assert sorted(by_order["st_a-o6"]) == ["st_a-l6-0", "st_a-l6-1", "st_a-l6-2"]
    assert "st_a-o4" not in by_order
    assert [r for r in lines if r["order_id"] == "st_a-o1"] == untouched


def test_deleting_a_parent_removes_children_the_page_does_not_carry(
    quarry_env: Settings,
) -> None:
    StoreWriter(quarry_env, "st_a").apply(orders_page("st_a", [1, 2]), full=True, first=True)

    StoreWriter(quarry_env, "st_a").apply(
        ChangePage({"orders": order_rows("st_a", [])}, deleted_ids=["st_a-o1"]),
        full=False,
        first=False,
    )

    assert ids(current_rows(quarry_env, "orders", "st_a")) == ["st_a-o2"]
    lines = current_rows(quarry_env, "order_lines", "st_a")
    assert {r["order_id"] for r in lines} == {"st_a-o2"}


def test_resumed_full_sync_leaves_no_duplicates(quarry_env: Settings) -> None:
    writer = StoreWriter(quarry_env, "st_a")
    writer.apply(orders_page("st_a", [1, 2]), full=True, first=True)
    writer.apply(orders_page("st_a", [3, 4]), full=True, first=False)
    # The run died before storing the cursor of the second page: a new run resumes there,
    # and the page also comes again to the same writer.
    StoreWriter(quarry_env, "st_a").apply(orders_page("st_a", [3, 4]), full=True, first=False)
    writer.apply(orders_page("st_a", [3, 4, 5]), full=True, first=False)

    orders = ids(current_rows(quarry_env, "orders", "st_a"))
    assert orders == [f"st_a-o{n}" for n in (1, 2, 3, 4, 5)]
    assert len(ids(current_rows(quarry_env, "order_lines", "st_a"))) == 10


def test_new_pages_of_a_full_sync_are_appended_not_merged(quarry_env: Settings) -> None:
    writer = StoreWriter(quarry_env, "st_a")
    writer.apply(orders_page("st_a", [1, 2]), full=True, first=True)
    writer.apply(orders_page("st_a", [3, 4]), full=True, first=False)
    writer.apply(orders_page("st_a", [4, 5]), full=True, first=False)

    table = open_table(quarry_env, "orders")
    history = table.history()
    assert [h["quarry.operation"] for h in history[:3]] == ["merge", "full", "full"]
    # The first page's commit and the appended one only added files.
    latest = table.version()
    files = [
        set(open_table(quarry_env, "orders", v).file_uris()) for v in range(latest - 3, latest)
    ]
    assert files[0] < files[1] < files[2]


def test_repeating_an_incremental_page_changes_nothing(quarry_env: Settings) -> None:
    StoreWriter(quarry_env, "st_a").apply(orders_page("st_a", [1, 2, 3]), full=True, first=True)
    page = orders_page("st_a", [2, 9], version=2, deleted=[3])
    StoreWriter(quarry_env, "st_a").apply(page, full=False, first=False)
    after_once = {t: current_rows(quarry_env, t) for t in ("orders", "order_lines")}

    StoreWriter(quarry_env, "st_a").apply(page, full=False, first=False)

    assert {t: current_rows(quarry_env, t) for t in after_once} == after_once


def test_decimals_and_timestamps_stay_exact(quarry_env: Settings) -> None:
    orders = order_rows("st_a", [1, 2])
    big = pa.array([Decimal("9999999999999999.99"), Decimal("0.01")], pa.decimal128(18, 2))
    orders = orders.set_column(orders.schema.get_field_index("total_price"), "total_price", big)
    writer = StoreWriter(quarry_env, "st_a")
    writer.apply(ChangePage({"orders": orders}), full=True, first=True)
    writer.apply(ChangePage({"orders": orders}), full=False, first=False)

    rows = _orders_by_id(quarry_env, "st_a")
    assert rows["st_a-o1"]["total_price"] == Decimal("9999999999999999.99")
    assert rows["st_a-o2"]["total_price"] == Decimal("0.01")
    assert rows["st_a-o1"]["created_at"] == orders["created_at"][0].as_py()


def test_delete_store_removes_only_that_store(quarry_env: Settings) -> None:
    for store in ("st_a", "st_b"):
        StoreWriter(quarry_env, store).apply(orders_page(store, [1, 2]), full=True, first=True)

    deleted = delete_store(quarry_env, "st_a")

    assert deleted == {"orders": 2, "order_lines": 4}
    assert current_rows(quarry_env, "orders", "st_a") == []
    assert current_rows(quarry_env, "order_lines", "st_a") == []
    assert len(current_rows(quarry_env, "orders", "st_b")) == 2
    assert delete_store(quarry_env, "st_a") == {}


def test_replace_children_replaces_exactly_the_given_parents(quarry_env: Settings) -> None:
    StoreWriter(quarry_env, "st_a").apply(orders_page("st_a", [1, 2]), full=True, first=True)

    inserted = replace_children(
        quarry_env, "order_lines", "st_a", ["st_a-o1"], line_rows("st_a", [1], 3, per_order=1)
    )

    assert inserted == 1
    lines = current_rows(quarry_env, "order_lines", "st_a")
    assert sorted((r["id"], r["sku"]) for r in lines) == [
        ("st_a-l1-0", "v3"),
        ("st_a-l2-0", "v0"),
        ("st_a-l2-1", "v0"),
    ]


def test_pages_of_another_store_or_schema_are_refused(quarry_env: Settings) -> None:
    writer = StoreWriter(quarry_env, "st_a")
    with pytest.raises(ValueError, match="st_b"):
        writer.apply(orders_page("st_b", [1]), full=True, first=True)
    with pytest.raises(ValueError, match="lack columns"):
        writer.apply(ChangePage({"orders": pa.table({"id": ["x"]})}), full=False, first=False)
    with pytest.raises(ValueError, match="not a store id"):
        StoreWriter(quarry_env, "st_a' OR '1'='1")
    assert current_rows(quarry_env, "orders") == []


def test_upsert_rows_merges_a_global_table_by_its_key(quarry_env: Settings) -> None:
    def rates(rate: str) -> pa.Table:
        row = {"date": date(2024, 1, 1), "base": "USD", "currency": "EUR", "rate": Decimal(rate)}
        return rows_table("exchange_rates", [row])

    upsert_rows(quarry_env, "exchange_rates", rates("0.9"))
    upsert_rows(quarry_env, "exchange_rates", rates("0.9123456789"))

    rows = current_rows(quarry_env, "exchange_rates")
    assert [r["rate"] for r in rows] == [Decimal("0.9123456789")]


def _sales(store: str, order: int, events: int, version: int) -> list[Row]:
    return [
        {
            "id": f"{store}-l{order}-{k}.o",
            "store_id": store,
            "order_id": f"{store}-o{order}",
            "event_type": "order",
            "net_sales": Decimal(version),
        }
        for k in range(events)
    ]


def test_model_pages_replace_the_rows_of_the_parents_they_name(quarry_env: Settings) -> None:
    writer = StoreWriter(quarry_env, "st_a")
    rebuild = rows_table("sales", _sales("st_a", 1, 2, 0) + _sales("st_a", 2, 3, 0))
    writer.apply(ChangePage({"sales": rebuild}), full=True, first=True)

    changed = rows_table("sales", _sales("st_a", 2, 1, 1))
    written = writer.apply(ChangePage({"sales": changed}), full=False, first=False)

    assert written == {"sales": 1}
    rows = current_rows(quarry_env, "sales", "st_a")
    assert sorted((r["id"], r["net_sales"]) for r in rows) == [
        ("st_a-l1-0.o", Decimal("0.00")),
        ("st_a-l1-1.o", Decimal("0.00")),
        ("st_a-l2-0.o", Decimal("1.00")),
    ]


def test_an_incremental_page_can_be_a_stores_first_write(quarry_env: Settings) -> None:
    written = StoreWriter(quarry_env, "st_a").apply(
        orders_page("st_a", [1, 2]), full=False, first=False
    )

    assert written == {"orders": 2, "order_lines": 4, "refunds": 0, "refund_lines": 0}
    assert ids(current_rows(quarry_env, "orders", "st_a")) == ["st_a-o1", "st_a-o2"]


def test_children_of_parents_not_in_the_page_are_refused(quarry_env: Settings) -> None:
    StoreWriter(quarry_env, "st_a").apply(orders_page("st_a", [1, 2]), full=True, first=True)
    before = current_rows(quarry_env, "orders", "st_a")
    changed = order_rows("st_a", [1], version=5)
    page = ChangePage({"orders": changed, "order_lines": line_rows("st_a", [1, 2])})

    with pytest.raises(ValueError, match="parents that are not being replaced"):
        StoreWriter(quarry_env, "st_a").apply(page, full=False, first=False)
    with pytest.raises(ValueError, match="parents that are not being replaced"):
        replace_children(quarry_env, "order_lines", "st_a", ["st_a-o1"], line_rows("st_a", [2]))
    assert current_rows(quarry_env, "orders", "st_a") == before
    assert len(current_rows(quarry_env, "order_lines", "st_a")) == 4


def test_clustering_sorts_ids_numerically_after_creation_time() -> None:
    lines = pa.table(
        {
            "id": ["st_a-l10-0", "st_a-l9-1", "st_a-l9-0", "st_a-l100-0"],
            "order_id": ["st_a-o10", "st_a-o9", "st_a-o9", "st_a-o100"],
        }
    )
    # By parent in numeric order (o9 before o10, where string order puts it last), then id.
    assert sort_clustered(lines, "order_lines")["id"].to_pylist() == [
        "st_a-l9-0",
        "st_a-l9-1",
        "st_a-l10-0",
        "st_a-l100-0",
    ]
    orders = order_rows("st_a", [3, 1, 2]).append_column("n", pa.array([3, 1, 2]))
    assert sort_clustered(orders, "orders")["n"].to_pylist() == [1, 2, 3]


def test_clustering_keeps_rows_already_in_order_and_sorts_near_misses() -> None:
    in_order = pa.table(
        {
            "id": ["st_a-l9-0", "st_a-l9-1", "st_a-l10-0", "st_a-l10-1", "st_a-l100-0"],
            "order_id": ["st_a-o9", "st_a-o9", "st_a-o10", "st_a-o10", "st_a-o100"],
        }
    )
    assert sort_clustered(in_order, "order_lines").equals(in_order)
    # One tie on the parent key broken the wrong way by the row's own id.
    swapped = in_order.take([0, 1, 3, 2, 4])
    assert sort_clustered(swapped, "order_lines").equals(in_order)
    # Equal lengths, string order wrong at the last pair only.
    late = in_order.take([0, 1, 2, 3]).append_column("n", pa.array([1, 2, 4, 3]))
    late = late.set_column(0, "id", pa.array(["st_a-l9-0", "st_a-l9-1", "st_a-l11-0",
                                              "st_a-l10-0"]))  # fmt: skip
    late = late.set_column(1, "order_id", pa.array(["st_a-o9", "st_a-o9", "st_a-o11",
                                                    "st_a-o10"]))  # fmt: skip
    assert sort_clustered(late, "order_lines")["n"].to_pylist() == [1, 2, 3, 4]
    # A null key is never taken as in order: the sort puts it last.
    nulls = pa.table({"id": [None, "st_a-l2-0", "st_a-l3-0"],
                      "order_id": ["st_a-o2", "st_a-o2", "st_a-o3"]})  # fmt: skip
    assert sort_clustered(nulls, "order_lines")["id"].to_pylist() == [
        "st_a-l2-0",
        None,
        "st_a-l3-0",
    ]


def test_statistics_skip_only_files_that_cannot_hold_a_key() -> None:
    files = [
        {"path": "a", "min": "st_a-o100", "max": "st_a-o199"},
        {"path": "b", "min": "st_a-o200", "max": "st_a-o299"},
        {"path": "none", "min": None, "max": None},  # no statistics: never skipped
        {"path": "long", "min": "st_a-o5", "max": "st_a-o5" + "9" * 80},  # maybe truncated
    ]
    found = _may_hold(files, "id", pa.array(["st_a-o150", "st_a-o300"]))
    assert [f["path"] for f in found] == ["a", "none", "long"]
    assert [f["path"] for f in _may_hold(files, "id", pa.array(["st_a-o200"]))] == [
        "b",
        "none",
        "long",
    ]
