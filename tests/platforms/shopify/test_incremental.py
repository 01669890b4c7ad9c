"""Incremental syncs: updated records with a lookback window, deletions, resumable runs."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta

from platforms.shopify.cursor import IncrementalCursor, decode, encode, iso
from tests.platforms.shopify.conftest import expected, rows
from tests.platforms.shopify.fake_shopify import as_lists

SINCE = datetime(2024, 6, 1, 12, 0, tzinfo=UTC)


def since(moment: datetime = SINCE) -> str:
    return encode(IncrementalCursor(since=iso(moment)))


def test_incremental_after_backfill_reports_updates_and_deletions(make_connector, fake):
    backfill = list(make_connector().changes("orders", None))
    handover = backfill[-1].cursor
    now = datetime.now(UTC)
    fake.shop.update("gid://shopify/Order/1001", iso(now), tags=["vip", "changed"])
    fake.shop.delete("gid://shopify/Order/1003", iso(now))

    pages = list(make_connector().changes("orders", handover))

    orders = rows(pages, "orders")
    assert [o["id"] for o in orders] == ["st_testshop01-o1001"]
    assert orders[0]["tags"] == "vip, changed"
    assert [line["id"] for line in rows(pages, "order_lines")] == [
        "st_testshop01-l2001",
        "st_testshop01-l2002",
    ]
    assert pages[-1].deleted_ids == ["st_testshop01-o1003"]
    assert decode(pages[-1].cursor).since >= decode(handover).since


def test_lookback_rereads_recent_changes_only(make_connector, fake):
    fake.shop.update("gid://shopify/Order/1002", iso(SINCE - timedelta(minutes=5)))
    fake.shop.update("gid://shopify/Order/1001", iso(SINCE - timedelta(hours=2)))
    connector = make_connector(lookback_seconds=900, now=lambda: SINCE + timedelta(hours=1))

    pages = list(connector.changes("orders", since()))

    assert [o["id"] for o in rows(pages, "orders")] == ["st_testshop01-o1002"]
    # Complete children: the refund and its lines come with the order.
    assert rows(pages, "refund_lines") == expected("refund_lines")
    query = next(e for e in fake.shop.log if e["operation"] == "QuarryOrderPage")
    assert query["variables"]["query"] == "updated_at:>='2024-06-01T11:45:00Z'"
    assert decode(pages[-1].cursor) == IncrementalCursor(since="2024-06-01T13:00:00Z")


def test_every_dataset_pages_to_the_same_rows_as_the_backfill(make_connector):
    connector = make_connector()
    for dataset, tables in {
        "orders": ("orders", "order_lines", "refunds", "refund_lines"),
        "customers": ("customers",),
        "products": ("products", "product_variants"),
        "draft_orders": ("draft_orders",),
    }.items():
        pages = list(connector.changes(dataset, since(datetime(2020, 1, 1, tzinfo=UTC))))
        for table in tables:
            assert rows(pages, table) == expected(table), table


def test_an_interrupted_run_resumes_from_its_page(make_connector, fake):
    # More customers than one API page (50), so the run has a page cursor to resume from.
    template = fake.shop.records["customers"][2]
    for n in range(60):
        fake.shop.add("customers", {**template, "id": f"gid://shopify/Customer/{700 + n}"})
    cursor = since(datetime(2020, 1, 1, tzinfo=UTC))
    pages = make_connector(page_rows=1).changes("customers", cursor)
    first = next(pages)
    pages.close()
    assert decode(first.cursor).page_after is not None

    rest = list(make_connector(page_rows=1).changes("customers", first.cursor))

    got = rows([first, *rest], "customers")
    assert len(got) == 63 and len({r["id"] for r in got}) == 63
    assert [r for r in got if r["id"] < "st_testshop01-c7"] == expected("customers")
    # The resumed run continued after the first API page instead of starting over.
    pages_read = [e for e in fake.shop.log if e["operation"] == "QuarryCustomerPage"]
    assert [bool(e["variables"]["after"]) for e in pages_read] == [False, True]


def test_children_beyond_the_first_page_are_fetched(make_connector, fake):
    big = copy.deepcopy(next(o for o in fake.shop.records["orders"] if o["id"].endswith("1001")))
    big["id"] = "gid://shopify/Order/1100"
    big["name"] = "#1100"
    big["lineItems"] = [
        {**big["lineItems"][0], "id": f"gid://shopify/LineItem/{3000 + n}"} for n in range(23)
    ]
    fake.shop.add("orders", as_lists(big))

    pages = list(make_connector().changes("orders", since(datetime(2020, 1, 1, tzinfo=UTC))))

    lines = [r for r in rows(pages, "order_lines") if r["order_id"] == "st_testshop01-o1100"]
    assert len(lines) == 23
    big_order = next(o for o in rows(pages, "orders") if o["id"] == "st_testshop01-o1100")
    assert big_order["line_item_count"] == 23
    assert "QuarryMoreOrderLineItems" in fake.shop.operations()


def test_deleted_products_come_from_destroy_events(make_connector, fake):
    fake.shop.delete("gid://shopify/Product/3002", iso(SINCE + timedelta(minutes=1)))
    fake.shop.delete("gid://shopify/Order/1002", iso(SINCE + timedelta(minutes=1)))
    pages = list(
        make_connector(now=lambda: SINCE + timedelta(hours=1)).changes("products", since())
    )
    assert pages[-1].deleted_ids == ["st_testshop01-p3002"]
    assert rows(pages, "products") == []


def test_an_expired_page_cursor_restarts_the_run(make_connector, fake):
    stale = encode(
        IncrementalCursor(
            since="2024-01-01T00:00:00Z",
            run_from="2020-01-01T00:00:00Z",
            run_until="2024-06-01T00:00:00Z",
            page_after="not-a-cursor-we-issued",
        )
    )
    pages = list(make_connector().changes("customers", stale))
    assert rows(pages, "customers") == expected("customers")
    assert decode(pages[-1].cursor) == IncrementalCursor(since="2024-06-01T00:00:00Z")
