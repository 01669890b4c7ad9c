"""A full sync through bulk operations maps the fake shop to exactly the expected rows."""

from __future__ import annotations

import json

import pytest

from platforms.shopify.cursor import IncrementalCursor, decode
from tests.platforms.shopify.conftest import expected, rows
from warehouse.schemas import SOURCE_DATASETS, TABLES


@pytest.mark.parametrize("dataset", list(SOURCE_DATASETS))
def test_backfill_matches_fixtures(make_connector, fake, dataset):
    connector = make_connector()
    pages = list(connector.changes(dataset, None))

    for table in SOURCE_DATASETS[dataset]:
        assert rows(pages, table) == expected(table), table
        for page in pages:
            assert page.tables[table].schema.equals(TABLES[table].schema)
    # The last page hands over to incremental syncs from when the backfill began.
    assert isinstance(decode(pages[-1].cursor), IncrementalCursor)
    assert "QuarryBulkRun" in fake.shop.operations()
    assert connector.count(dataset) == len(expected(SOURCE_DATASETS[dataset][0]))


def test_bulk_files_are_downloaded_without_the_token(make_connector, fake):
    list(make_connector().changes("orders", None))
    assert fake.shop.downloads
    assert all("x-shopify-access-token" not in h for h in fake.shop.downloads)


def test_children_arrive_with_their_parent(make_connector):
    """Every page holds complete children: lines and refunds of the orders it lists."""
    pages = list(make_connector(page_rows=1).changes("orders", None))
    for page in pages:
        order_ids = set(page.tables["orders"].column("id").to_pylist())
        for child in ("order_lines", "refunds", "refund_lines"):
            assert set(page.tables[child].column("order_id").to_pylist()) <= order_ids
    assert rows(pages, "refund_lines") == expected("refund_lines")


def test_cursor_is_json(make_connector):
    page = next(iter(make_connector(page_rows=1).changes("customers", None)))
    doc = json.loads(page.cursor)
    assert doc["phase"] == "backfill" and doc["windows"][0]["after"] == 501


def test_many_refunds_and_long_refunds_are_fetched_whole(make_connector, fake):
    """Refund details come in batches within the query cost limit, and a refund with more
    line items than one page gets the rest through follow-up queries."""
    order = next(o for o in fake.shop.records["orders"] if o["id"].endswith("/1002"))
    template = order["refunds"][0]
    for n in range(6):
        lines = [
            {
                **template["refundLineItems"][0],
                "id": f"gid://shopify/RefundLineItem/{9000 + 100 * n + k}",
            }
            for k in range(30 if n == 0 else 1)
        ]
        order["refunds"].append(
            {**template, "id": f"gid://shopify/Refund/{7100 + n}", "refundLineItems": lines}
        )

    pages = list(make_connector().changes("orders", None))

    assert len(rows(pages, "refunds")) == 7
    refund_lines = rows(pages, "refund_lines")
    assert len(refund_lines) == 1 + 30 + 5
    assert len({r["id"] for r in refund_lines}) == len(refund_lines)
    operations = fake.shop.operations()
    assert operations.count("QuarryRefundDetails") == 2
    assert "QuarryMoreRefundRefundLineItems" in operations
    assert not any("MAX_COST" in str(e) for e in fake.shop.log)


def test_a_version_1_backfill_cursor_is_read_as_its_window_and_the_rest():
    from platforms.shopify.cursor import BackfillCursor, Window

    old = json.dumps(
        {
            "v": 1,
            "phase": "backfill",
            "end": "2024-06-01T00:00:00Z",
            "lo": "2024-01-01T00:00:00Z",
            "span": 86400,
            "after": 1001,
            "op": "gid://shopify/BulkOperation/9",
        }
    )
    # `after` applies to the window [lo, lo + span) only.
    assert decode(old) == BackfillCursor(
        end="2024-06-01T00:00:00Z",
        windows=(
            Window(
                "2024-01-01T00:00:00Z",
                "2024-01-02T00:00:00Z",
                1001,
                "gid://shopify/BulkOperation/9",
            ),
            Window("2024-01-02T00:00:00Z", "2024-06-01T00:00:00Z"),
        ),
    )
