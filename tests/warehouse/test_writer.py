"""The writer on hand-made pages: full syncs replace one store's partition, incremental
pages upsert parents and replace their children exactly, and nothing is applied twice."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pyarrow as pa
import pytest

from tests.warehouse.conftest import (
    Row,
    current_rows,
    ids,
    line_rows,
    order_rows,
    orders_page,
    rows_table,
)
from warehouse.lake import Lake
from warehouse.pages import ChangePage
from warehouse.writer import StoreWriter, delete_store, upsert_rows


def _orders_by_id(lake: Lake, store: str) -> dict[str, Row]:
    return {row["id"]: row for row in current_rows(lake, "orders", store)}


def test_full_sync_replaces_exactly_that_store(lake: Lake) -> None:
    StoreWriter(lake, "st_a").apply(orders_page("st_a", [1, 2, 3]), full=True, first=True)
    StoreWriter(lake, "st_b").apply(orders_page("st_b", [1, 2]), full=True, first=True)
    before_b = {t: current_rows(lake, t, "st_b") for t in ("orders", "order_lines")}

    written = StoreWriter(lake, "st_a").apply(
        orders_page("st_a", [7, 8], version=1), full=True, first=True
    )

    assert written == {"orders": 2, "order_lines": 4, "refunds": 0, "refund_lines": 0}
    assert ids(current_rows(lake, "orders", "st_a")) == ["st_a-o7", "st_a-o8"]
    lines = current_rows(lake, "order_lines", "st_a")
    assert sorted({row["order_id"] for row in lines}) == ["st_a-o7", "st_a-o8"]
    assert {t: current_rows(lake, t, "st_b") for t in before_b} == before_b


def test_full_sync_first_page_empties_child_tables_it_does_not_carry(
    lake: Lake,
) -> None:
    writer = StoreWriter(lake, "st_a")
    writer.apply(orders_page("st_a", [1, 2]), full=True, first=True)

    writer.apply(ChangePage({"orders": order_rows("st_a", [5])}), full=True, first=True)

    assert ids(current_rows(lake, "orders", "st_a")) == ["st_a-o5"]
    assert current_rows(lake, "order_lines", "st_a") == []


def test_incremental_upserts_replaces_children_and_deletes(lake: Lake) -> None:
    StoreWriter(lake, "st_a").apply(orders_page("st_a", [1, 2, 3, 4, 5]), full=True, first=True)
    untouched = [r for r in current_rows(lake, "order_lines") if r["order_id"] == "st_a-o1"]
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

    written = StoreWriter(lake, "st_a").apply(page, full=False, first=False)

    assert written == {"orders": 3, "order_lines": 4, "refunds": 0, "refund_lines": 0}
    orders = _orders_by_id(lake, "st_a")
    assert sorted(orders) == ["st_a-o1", "st_a-o2", "st_a-o3", "st_a-o5", "st_a-o6"]
    assert orders["st_a-o2"]["tags"] == "v1"
    assert orders["st_a-o1"]["tags"] == "v0"
    lines = current_rows(lake, "order_lines", "st_a")
    by_order: dict[str, list[str]] = {}
    for row in lines:
        by_order.setdefault(row["order_id"], []).append(row["id"])
    assert sorted(by_order["st_a-o2"]) == ["st_a-l2-0"]
    assert sorted(by_order["st_a-o6"]) == ["st_a-l6-0", "st_a-l6-1", "st_a-l6-2"]
    assert "st_a-o4" not in by_order
    assert [r for r in lines if r["order_id"] == "st_a-o1"] == untouched


def test_deleting_a_parent_removes_children_the_page_does_not_carry(
    lake: Lake,
) -> None:
    StoreWriter(lake, "st_a").apply(orders_page("st_a", [1, 2]), full=True, first=True)

    StoreWriter(lake, "st_a").apply(
        ChangePage({"orders": order_rows("st_a", [])}, deleted_ids=["st_a-o1"]),
        full=False,
        first=False,
    )

    assert ids(current_rows(lake, "orders", "st_a")) == ["st_a-o2"]
    lines = current_rows(lake, "order_lines", "st_a")
    assert {r["order_id"] for r in lines} == {"st_a-o2"}


def test_resumed_full_sync_leaves_no_duplicates(lake: Lake) -> None:
    writer = StoreWriter(lake, "st_a")
    writer.apply(orders_page("st_a", [1, 2]), full=True, first=True)
    writer.apply(orders_page("st_a", [3, 4]), full=True, first=False)
    # The run died before storing the cursor of the second page: a new run resumes there,
    # and the page also comes again to the same writer.
    StoreWriter(lake, "st_a").apply(orders_page("st_a", [3, 4]), full=True, first=False)
    writer.apply(orders_page("st_a", [3, 4, 5]), full=True, first=False)

    orders = ids(current_rows(lake, "orders", "st_a"))
    assert orders == [f"st_a-o{n}" for n in (1, 2, 3, 4, 5)]
    assert len(ids(current_rows(lake, "order_lines", "st_a"))) == 10


def test_new_pages_of_a_full_sync_are_appended_not_merged(lake: Lake) -> None:
    writer = StoreWriter(lake, "st_a")
    writer.apply(orders_page("st_a", [1, 2]), full=True, first=True)
    writer.apply(orders_page("st_a", [3, 4]), full=True, first=False)
    writer.apply(orders_page("st_a", [4, 5]), full=True, first=False)

    cursor = lake.cursor()
    commits = cursor.execute(
        "SELECT commit_message, changes FROM lake.snapshots() WHERE author = 'st_a' "
        "ORDER BY snapshot_id"
    ).fetchall()
    cursor.close()
    assert [message for message, _ in commits] == ["full", "full", "merge"]
    # The first page emptied an empty store (nothing to delete) and the appended page only
    # inserted; the page that repeats order 4 deleted it first.
    # (Small writes are inlined into the catalog: "inlined_insert" and the like.)
    kinds = [
        sorted({"delete" if "delet" in change else "insert" for change in changes})
        for _, changes in commits
    ]
    assert kinds == [["insert"], ["insert"], ["delete", "insert"]]


def test_repeating_an_incremental_page_changes_nothing(lake: Lake) -> None:
    StoreWriter(lake, "st_a").apply(orders_page("st_a", [1, 2, 3]), full=True, first=True)
    page = orders_page("st_a", [2, 9], version=2, deleted=[3])
    StoreWriter(lake, "st_a").apply(page, full=False, first=False)
    after_once = {t: current_rows(lake, t) for t in ("orders", "order_lines")}

    StoreWriter(lake, "st_a").apply(page, full=False, first=False)

    assert {t: current_rows(lake, t) for t in after_once} == after_once


def test_decimals_and_timestamps_stay_exact(lake: Lake) -> None:
    orders = order_rows("st_a", [1, 2])
    big = pa.array([Decimal("9999999999999999.99"), Decimal("0.01")], pa.decimal128(18, 2))
    orders = orders.set_column(orders.schema.get_field_index("total_price"), "total_price", big)
    writer = StoreWriter(lake, "st_a")
    writer.apply(ChangePage({"orders": orders}), full=True, first=True)
    writer.apply(ChangePage({"orders": orders}), full=False, first=False)

    rows = _orders_by_id(lake, "st_a")
    assert rows["st_a-o1"]["total_price"] == Decimal("9999999999999999.99")
    assert rows["st_a-o2"]["total_price"] == Decimal("0.01")
    assert rows["st_a-o1"]["created_at"] == orders["created_at"][0].as_py()


def test_delete_store_removes_only_that_store(lake: Lake) -> None:
    for store in ("st_a", "st_b"):
        StoreWriter(lake, store).apply(orders_page(store, [1, 2]), full=True, first=True)

    deleted = delete_store(lake, "st_a")

    assert deleted == {"orders": 2, "order_lines": 4}
    assert current_rows(lake, "orders", "st_a") == []
    assert current_rows(lake, "order_lines", "st_a") == []
    assert len(current_rows(lake, "orders", "st_b")) == 2
    assert delete_store(lake, "st_a") == {}


def test_pages_of_another_store_or_schema_are_refused(lake: Lake) -> None:
    writer = StoreWriter(lake, "st_a")
    with pytest.raises(ValueError, match="st_b"):
        writer.apply(orders_page("st_b", [1]), full=True, first=True)
    with pytest.raises(ValueError, match="lack columns"):
        writer.apply(ChangePage({"orders": pa.table({"id": ["x"]})}), full=False, first=False)
    with pytest.raises(ValueError, match="not a store id"):
        StoreWriter(lake, "st_a' OR '1'='1")
    assert current_rows(lake, "orders") == []


def test_upsert_rows_merges_a_global_table_by_its_key(lake: Lake) -> None:
    def rates(rate: str) -> pa.Table:
        row = {"date": date(2024, 1, 1), "base": "USD", "currency": "EUR", "rate": Decimal(rate)}
        return rows_table("exchange_rates", [row])

    upsert_rows(lake, "exchange_rates", rates("0.9"))
    upsert_rows(lake, "exchange_rates", rates("0.9123456789"))

    rows = current_rows(lake, "exchange_rates")
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


def test_model_pages_replace_the_rows_of_the_parents_they_name(lake: Lake) -> None:
    writer = StoreWriter(lake, "st_a")
    rebuild = rows_table("sales", _sales("st_a", 1, 2, 0) + _sales("st_a", 2, 3, 0))
    writer.apply(ChangePage({"sales": rebuild}), full=True, first=True)

    changed = rows_table("sales", _sales("st_a", 2, 1, 1))
    written = writer.apply(ChangePage({"sales": changed}), full=False, first=False)

    assert written == {"sales": 1}
    rows = current_rows(lake, "sales", "st_a")
    assert sorted((r["id"], r["net_sales"]) for r in rows) == [
        ("st_a-l1-0.o", Decimal("0.00")),
        ("st_a-l1-1.o", Decimal("0.00")),
        ("st_a-l2-0.o", Decimal("1.00")),
    ]


def test_an_incremental_page_can_be_a_stores_first_write(lake: Lake) -> None:
    written = StoreWriter(lake, "st_a").apply(orders_page("st_a", [1, 2]), full=False, first=False)

    assert written == {"orders": 2, "order_lines": 4, "refunds": 0, "refund_lines": 0}
    assert ids(current_rows(lake, "orders", "st_a")) == ["st_a-o1", "st_a-o2"]


def test_children_of_parents_not_in_the_page_are_refused(lake: Lake) -> None:
    StoreWriter(lake, "st_a").apply(orders_page("st_a", [1, 2]), full=True, first=True)
    before = current_rows(lake, "orders", "st_a")
    changed = order_rows("st_a", [1], version=5)
    page = ChangePage({"orders": changed, "order_lines": line_rows("st_a", [1, 2])})

    with pytest.raises(ValueError, match="parents that are not being replaced"):
        StoreWriter(lake, "st_a").apply(page, full=False, first=False)
    assert current_rows(lake, "orders", "st_a") == before
    assert len(current_rows(lake, "order_lines", "st_a")) == 4
