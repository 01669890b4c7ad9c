"""DemoConnector: a full read is the ground truth, pages are bounded and complete, and a
cursor resumes exactly where its page ended."""

from __future__ import annotations

import pyarrow as pa
import pytest

from platforms.demo.connector import DemoConnector
from quarry.errors import InvalidRequest, NotFound
from tests.platforms.demo.conftest import SeededAccount
from warehouse.pages import ChangePage
from warehouse.schemas import SOURCE_DATASETS, TABLES


def _connector(seeded: SeededAccount, page_size: int = 50_000, store: int = 0) -> DemoConnector:
    return DemoConnector(
        seeded.settings, seeded.account_id, seeded.stores[store].id, page_size=page_size
    )


def _combined(pages: list[ChangePage], name: str) -> pa.Table:
    return pa.concat_tables([p.tables[name] for p in pages])


def _by_id(table: pa.Table) -> pa.Table:
    return table.sort_by("id")


@pytest.mark.parametrize("dataset", list(SOURCE_DATASETS))
def test_full_read_is_the_ground_truth(seeded: SeededAccount, dataset: str) -> None:
    for index, store in enumerate(seeded.stores):
        connector = _connector(seeded, store=index)
        pages = list(connector.changes(dataset, None))
        truth = seeded.tables(store.id)
        assert all(page.deleted_ids == [] for page in pages)
        for name in SOURCE_DATASETS[dataset]:
            got = _combined(pages, name)
            assert got.schema.equals(TABLES[name].schema)
            assert _by_id(got).equals(_by_id(truth[name])), name
        assert connector.count(dataset) == truth[SOURCE_DATASETS[dataset][0]].num_rows


def test_pages_are_bounded_ordered_and_complete(seeded: SeededAccount) -> None:
    connector = _connector(seeded, page_size=700)
    pages = list(connector.changes("orders", None))
    truth = seeded.tables(seeded.stores[0].id)
    assert len(pages) == -(-truth["orders"].num_rows // 700)
    keys: list[tuple[object, str]] = []
    for page in pages:
        orders = page.tables["orders"]
        assert 0 < orders.num_rows <= 700
        keys += list(zip(orders["updated_at"].to_pylist(), orders["id"].to_pylist(), strict=True))
        ids = set(orders["id"].to_pylist())
        for child in ("order_lines", "refunds", "refund_lines"):
            assert set(page.tables[child]["order_id"].to_pylist()) <= ids
        # Every line of every order of the page is in the page.
        lines = page.tables["order_lines"]["order_id"].value_counts().to_pylist()
        per_order = {c["values"]: c["counts"] for c in lines}
        expected = dict(
            zip(orders["id"].to_pylist(), orders["line_item_count"].to_pylist(), strict=True)
        )
        assert per_order == expected
    assert keys == sorted(keys)
    assert len({k[1] for k in keys}) == len(keys) == truth["orders"].num_rows
    for child in ("order_lines", "refunds", "refund_lines"):
        assert _by_id(_combined(pages, child)).equals(_by_id(truth[child]))


def test_a_cursor_resumes_after_its_page(seeded: SeededAccount) -> None:
    connector = _connector(seeded, page_size=500)
    pages = list(connector.changes("orders", None))
    assert len(pages) > 4
    middle = 2
    resumed = list(connector.changes("orders", pages[middle].cursor))
    for name in SOURCE_DATASETS["orders"]:
        rest = _combined(pages[middle + 1 :], name)
        assert _combined(resumed, name).equals(rest), name
    # The last page's cursor has nothing after it: one empty page that keeps the position.
    tail = list(connector.changes("orders", pages[-1].cursor))
    assert len(tail) == 1 and tail[0].tables["orders"].num_rows == 0
    assert tail[0].cursor == pages[-1].cursor


def test_customers_products_and_drafts_page_too(seeded: SeededAccount) -> None:
    for dataset in ("customers", "products", "draft_orders"):
        connector = _connector(seeded, page_size=37)
        pages = list(connector.changes(dataset, None))
        parent = SOURCE_DATASETS[dataset][0]
        ids = _combined(pages, parent)["id"].to_pylist()
        assert len(ids) == len(set(ids)) == connector.count(dataset)
        resumed = list(connector.changes(dataset, pages[1].cursor))
        assert _combined(resumed, parent)["id"].to_pylist() == ids[2 * 37 :]


def test_bad_requests_are_refused(seeded: SeededAccount) -> None:
    connector = _connector(seeded)
    with pytest.raises(InvalidRequest):
        list(connector.changes("sales", None))
    with pytest.raises(InvalidRequest):
        list(connector.changes("orders", "not a cursor"))
    with pytest.raises(NotFound):
        DemoConnector(seeded.settings, seeded.account_id, "st_missing").count("orders")
