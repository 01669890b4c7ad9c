"""Completeness, loudly: what Shopify reports for a window is compared with what was read;
a window that disagrees is read once more, and a second disagreement fails the sync before
any page moves the cursor past it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from platforms.shopify.cursor import IncrementalCursor, decode, encode, iso
from platforms.shopify.errors import ShopifyIncompleteError
from tests.platforms.shopify.conftest import expected, rows

SINCE = datetime(2024, 1, 1, tzinfo=UTC)


def bulk_runs(fake) -> int:
    return fake.shop.operations().count("QuarryBulkRun")


def test_a_bulk_file_missing_a_parent_is_read_again(make_connector, fake):
    fake.shop.bulk_plan = ["drop:1"]  # rootObjectCount says 3, the file holds 2

    pages = list(make_connector().changes("orders", None))

    assert rows(pages, "orders") == expected("orders")
    assert bulk_runs(fake) == 2


def test_a_bulk_window_short_twice_fails_before_any_page(make_connector, fake):
    fake.shop.bulk_plan = ["drop:1", "drop:1"]
    emitted = []
    with pytest.raises(ShopifyIncompleteError, match="rootObjectCount") as caught:
        emitted.extend(make_connector().changes("orders", None))
    assert emitted == []  # nothing of the window was handed to the sync
    assert caught.value.status == 502


def test_a_window_counted_differently_than_exported_fails(make_connector, fake):
    # A record Shopify counts but no export returns, rootObjectCount included.
    fake.shop.hidden_from_bulk = {"gid://shopify/Customer/502"}
    with pytest.raises(ShopifyIncompleteError, match="Shopify counts 2 customers") as caught:
        list(make_connector(api_version="2026-10").changes("customers", None))
    assert "but 1 were exported" in str(caught.value)


def test_exact_counts_are_asked_without_the_10000_cap(make_connector, fake):
    list(make_connector().changes("orders", None))
    count = next(e for e in fake.shop.log if e["operation"] == "QuarryOrderCount")
    assert count["variables"]["query"].startswith("created_at:>=")


def test_an_incremental_window_missing_a_record_is_read_again(make_connector, fake):
    fake.shop.drop_pages = 1  # the first read of the window loses one record
    cursor = encode(IncrementalCursor(since=iso(SINCE)))

    pages = list(make_connector(lookback_seconds=0).changes("orders", cursor))

    assert rows(pages, "orders") == expected("orders")
    assert fake.shop.operations().count("QuarryOrderCount") == 2


def test_an_incremental_window_short_twice_keeps_the_cursor(make_connector, fake):
    fake.shop.drop_pages = 2
    cursor = encode(IncrementalCursor(since=iso(SINCE)))
    emitted = []
    with pytest.raises(ShopifyIncompleteError, match="updated in") as caught:
        emitted.extend(make_connector(lookback_seconds=0).changes("orders", cursor))
    # No page moved `since` past the unverified window.
    assert all(decode(p.cursor).since == iso(SINCE) for p in emitted)
    assert "read a second time" in str(caught.value) or "second time" in str(caught.value)


def test_records_updated_again_while_read_leave_the_window(make_connector, fake):
    """A record updated after the run began is outside [run_from, run_until) in Shopify's
    count and in ours: no false alarm."""
    now = datetime.now(UTC)
    fake.shop.update("gid://shopify/Order/1002", iso(now + timedelta(hours=1)))
    cursor = encode(IncrementalCursor(since=iso(SINCE)))
    pages = list(make_connector(lookback_seconds=0, now=lambda: now).changes("orders", cursor))
    assert len(rows(pages, "orders")) == 3
