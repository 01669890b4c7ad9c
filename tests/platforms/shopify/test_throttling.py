"""Rate limits: the cost bucket, THROTTLED, 429 Retry-After and 5xx slow a sync down but
never fail it, and a sync keeps to its share of the bucket."""

from __future__ import annotations

import time

import pytest

from platforms.shopify.client import ShopifyClient
from platforms.shopify.cursor import IncrementalCursor, encode
from platforms.shopify.errors import ShopifyAuthError, ShopifyError
from platforms.shopify.queries import SHOP
from platforms.shopify.settings import ShopConnection
from platforms.shopify.throttle import CostBucket
from tests.platforms.shopify.conftest import DOMAIN, expected, fast_settings, rows

FROM_2020 = encode(IncrementalCursor(since="2020-01-01T00:00:00Z"))


def small_bucket(fake, maximum: float = 1000, rate: float = 2000) -> None:
    shop = fake.shop
    with shop.lock:
        shop.bucket_max, shop.restore_rate = maximum, rate
        shop.available, shop.bucket_at = maximum, shop._now()


def test_throttling_slows_the_sync_without_failing_it(make_connector, fake):
    small_bucket(fake)
    fake.shop.inject = ["throttled", "429", "500", "throttled"]
    started = time.monotonic()

    pages = list(make_connector(page_rows=2).changes("orders", FROM_2020))

    for table in ("orders", "order_lines", "refunds", "refund_lines"):
        assert rows(pages, table) == expected(table)
    injected = [e["injected"] for e in fake.shop.log if "injected" in e]
    assert injected == ["throttled", "429", "500", "throttled"]
    assert time.monotonic() - started >= 0.2  # Retry-After was honoured


def test_a_sync_keeps_to_its_share_of_the_bucket(make_connector, fake):
    small_bucket(fake, maximum=1000, rate=1000)
    connector = make_connector(bucket_share=0.5)
    for dataset in ("orders", "products", "draft_orders"):
        list(connector.changes(dataset, FROM_2020))

    seen: set[str] = set()
    for entry in fake.shop.log:
        if entry["operation"] in seen and not entry.get("throttled"):
            # What was left for others after this request: at least half the bucket.
            assert entry["available"] - entry["requested"] >= 500 - 1, entry
        seen.add(entry["operation"])
    assert not any(e.get("throttled") for e in fake.shop.log[len(seen) :])


def test_the_bucket_model_waits_for_the_refill_within_its_share():
    now = [0.0]
    bucket = CostBucket(share=0.5, clock=lambda: now[0])
    assert bucket.wait_before("QuarryOrderPage") == 0  # nothing known yet
    bucket.observe(
        "QuarryOrderPage",
        {
            "requestedQueryCost": 300,
            "throttleStatus": {
                "maximumAvailable": 1000.0,
                "currentlyAvailable": 600.0,
                "restoreRate": 100.0,
            },
        },
    )
    # 300 more must leave 500 (half the bucket): 800 needed, 600 there, 100 per second.
    assert bucket.wait_before("QuarryOrderPage") == pytest.approx(2.0)
    now[0] = 1.5
    assert bucket.wait_before("QuarryOrderPage") == pytest.approx(0.5)
    now[0] = 2.0
    assert bucket.wait_before("QuarryOrderPage") == 0
    # An operation costing more than the share waits for a full bucket, not forever.
    bucket.costs["QuarryHuge"] = 900
    assert bucket.wait_before("QuarryHuge") == pytest.approx(2.0)


def test_a_wrong_token_is_an_auth_error_naming_the_shop_not_the_token(fake):
    client = ShopifyClient(ShopConnection(DOMAIN, "shpat_wrong", "2025-10"), fast_settings(fake))
    with client, pytest.raises(ShopifyAuthError) as info:
        client.query(SHOP)
    assert DOMAIN in str(info.value) and "shpat_wrong" not in str(info.value)


def test_persistent_server_errors_give_up_with_a_reason(fake):
    fake.shop.inject = ["500"] * 10
    client = ShopifyClient(
        ShopConnection(DOMAIN, "shpat_fake_0123456789abcdef", "2025-10"),
        fast_settings(fake, max_attempts=3),
    )
    with client, pytest.raises(ShopifyError, match="HTTP 500"):
        client.query(SHOP)


def test_unknown_api_version_is_a_clear_error(fake):
    client = ShopifyClient(
        ShopConnection(DOMAIN, "shpat_fake_0123456789abcdef", "2019-04"), fast_settings(fake)
    )
    with client, pytest.raises(ShopifyError, match="API version 2019-04"):
        client.query(SHOP)


def test_a_connectors_clients_share_one_bucket_model(make_connector):
    # Each dataset's sync opens its own client: a new one must not start blind and spend
    # what the last one saw was already spent.
    connector = make_connector(bucket_share=0.5)
    first, second = connector.client(), connector.client()
    status = {"maximumAvailable": 1000.0, "currentlyAvailable": 550.0, "restoreRate": 50.0}
    first.bucket.observe("QuarryDeletions", {"requestedQueryCost": 102, "throttleStatus": status})
    # 102 for the query plus the 500 kept for others, 550 left: about a second to wait
    # (less the time since the observation, a few milliseconds).
    assert second.bucket.wait_before("QuarryDeletions") > 0.9
