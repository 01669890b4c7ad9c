"""The Shopify probe (platforms/shopify/probe.py): one small GraphQL request per store tells
which datasets have records updated, or events of their subject (refunds, deletions), since
their cursors, lookback included; against the fake Admin API server."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from platforms.shopify.cursor import IncrementalCursor, encode, iso
from platforms.shopify.queries import DATASETS

LATER = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)


def _caught_up(at: datetime = LATER) -> dict[str, str | None]:
    return {dataset: encode(IncrementalCursor(since=iso(at))) for dataset in DATASETS}


def _probes(fake) -> int:  # type: ignore[no-untyped-def]
    return sum(1 for entry in fake.shop.log if entry["operation"] == "QuarryProbe")


def test_one_request_names_the_datasets_with_news(make_connector, fake):  # type: ignore[no-untyped-def]
    connector = make_connector(lookback_seconds=900)
    cursors = _caught_up()
    assert connector.changed(cursors) == []
    assert _probes(fake) == 1

    # An order updated after the cursor, and a customer deleted after it.
    fake.shop.update("gid://shopify/Order/1001", iso(LATER + timedelta(minutes=5)))
    fake.shop.delete("gid://shopify/Customer/501", iso(LATER + timedelta(minutes=6)))
    assert connector.changed(cursors) == ["orders", "customers"]
    assert _probes(fake) == 2

    # Within the lookback before a cursor counts: the sync re-reads that window too.
    assert connector.changed(_caught_up(LATER + timedelta(minutes=10))) == [
        "orders",
        "customers",
    ]
    assert connector.changed(_caught_up(LATER + timedelta(minutes=30))) == []


def test_datasets_without_a_settled_cursor_need_no_request(make_connector, fake):  # type: ignore[no-untyped-def]
    connector = make_connector()
    # Never synced (no cursor), or an incremental run left half-way: work without asking.
    half_way = encode(IncrementalCursor(since=iso(LATER), run_from=iso(LATER)))
    assert connector.changed({}) == list(DATASETS)
    assert _probes(fake) == 0
    assert connector.changed({**_caught_up(), "products": half_way}) == ["products"]
    assert _probes(fake) == 1
