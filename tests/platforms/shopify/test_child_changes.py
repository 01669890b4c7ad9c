"""Changes that do not touch the order: a refund that leaves the order's updatedAt alone
still reaches the warehouse, found through the order's `refund_success` event."""

from __future__ import annotations

from datetime import UTC, datetime

from platforms.shopify.cursor import iso

REFUND = {
    "id": "gid://shopify/Refund/7900",
    "createdAt": "2026-11-20T10:00:00Z",
    "note": "Late return",
    "totalRefundedSet": {"shopMoney": {"amount": "20.00", "currencyCode": "EUR"}},
    "duties": [],
    "refundLineItems": {
        "nodes": [
            {
                "id": "gid://shopify/RefundLineItem/8900",
                "quantity": 1,
                "lineItem": {"id": "gid://shopify/LineItem/2001"},
                "subtotalSet": {"shopMoney": {"amount": "20.0", "currencyCode": "EUR"}},
                "totalTaxSet": {"shopMoney": {"amount": "3.8", "currencyCode": "EUR"}},
            }
        ]
    },
    "refundShippingLines": {"nodes": []},
}


def test_a_refund_only_change_reaches_the_next_incremental_sync(make_connector, fake):
    backfill = list(make_connector().changes("orders", None))
    handover = backfill[-1].cursor
    order = fake.shop.find("gid://shopify/Order/1001")
    updated_before = order["updatedAt"]

    fake.shop.refund("gid://shopify/Order/1001", REFUND, iso(datetime.now(UTC)))
    assert fake.shop.find("gid://shopify/Order/1001")["updatedAt"] == updated_before

    pages = list(make_connector().changes("orders", handover))

    refunds = [r for p in pages for r in p.tables["refunds"].to_pylist()]
    assert "st_testshop01-r7900" in {r["id"] for r in refunds}
    refund_lines = [r for p in pages for r in p.tables["refund_lines"].to_pylist()]
    assert any(r["refund_id"] == "st_testshop01-r7900" for r in refund_lines)
    # The order came whole (its lines too), read by id through nodes(ids:).
    assert {o["id"] for p in pages for o in p.tables["orders"].to_pylist()} == {
        "st_testshop01-o1001"
    }
    assert "QuarryOrderNodes" in fake.shop.operations()
