"""Combining pages means the same as applying them one after the other."""

from __future__ import annotations

import pytest

from tests.warehouse.conftest import current_rows, orders_page, rows_table
from warehouse.lake import Lake
from warehouse.pages import ChangePage, batched, combine_pages
from warehouse.writer import StoreWriter


def _state(lake: Lake) -> dict[str, list[dict]]:
    return {t: current_rows(lake, t) for t in ("orders", "order_lines")}


def test_combined_pages_apply_like_the_pages_in_order(lake: Lake) -> None:
    pages = [
        orders_page("st_a", [1, 2, 3], version=1),
        orders_page("st_a", [2, 4], version=2, deleted=[3], per_order=1),
        orders_page("st_a", [3, 5], version=3, deleted=[4, 1]),
        orders_page("st_a", [5], version=4, per_order=3),
    ]
    start = orders_page("st_a", [1, 2, 3, 4, 5, 6])
    StoreWriter(lake, "st_a").apply(start, full=True, first=True)
    for page in pages:
        StoreWriter(lake, "st_a").apply(page, full=False, first=False)
    one_by_one = _state(lake)

    StoreWriter(lake, "st_a").apply(start, full=True, first=True)
    combined = combine_pages(pages)
    StoreWriter(lake, "st_a").apply(combined, full=False, first=False)

    assert _state(lake) == one_by_one
    assert sorted(combined.deleted_ids) == ["st_a-o1", "st_a-o4"]
    assert combined.cursor == "st_a:4"
    tags = {r["id"]: r["tags"] for r in one_by_one["orders"]}
    assert tags == {"st_a-o2": "v2", "st_a-o3": "v3", "st_a-o5": "v4", "st_a-o6": "v0"}


def test_pages_without_overlap_are_concatenated() -> None:
    combined = combine_pages([orders_page("st_a", [1, 2]), orders_page("st_a", [3])])
    assert combined.tables["orders"].num_rows == 3
    assert combined.tables["order_lines"].num_rows == 6
    assert combined.deleted_ids == []


def test_batched_groups_pages_by_parent_rows() -> None:
    pages = [orders_page("st_a", [n], version=n) for n in range(5)]
    batches = list(batched(pages, max_rows=2))
    assert [b.tables["orders"].num_rows for b in batches] == [2, 2, 1]
    assert [b.cursor for b in batches] == ["st_a:1", "st_a:3", "st_a:4"]


def test_pages_of_different_datasets_do_not_combine() -> None:
    customers = ChangePage({"customers": rows_table("customers", [])})
    with pytest.raises(ValueError, match="different datasets"):
        combine_pages([orders_page("st_a", [1]), customers])


def test_a_page_holds_the_tables_of_one_dataset() -> None:
    page = orders_page("st_a", [1])
    mixed = ChangePage({**page.tables, "sales": rows_table("sales", [])})
    with pytest.raises(ValueError, match="not tables of the orders dataset"):
        combine_pages([mixed])
