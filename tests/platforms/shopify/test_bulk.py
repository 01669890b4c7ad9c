"""The bulk operation life cycle: resume, empty results, partial data, the wait cap."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from platforms.shopify.backfill import window_search
from platforms.shopify.errors import ShopifyAuthError
from platforms.shopify.queries import ORDERS
from tests.platforms.shopify.conftest import expected, rows

NOW = datetime(2024, 6, 1, tzinfo=UTC)


def bulk_queries(fake) -> list[str]:
    return [e["variables"]["query"] for e in fake.shop.log if e["operation"] == "QuarryBulkRun"]


def assert_orders_complete(pages) -> None:
    for table in ("orders", "order_lines", "refunds", "refund_lines"):
        got = rows(pages, table)
        assert got == expected(table), table
        assert len({r["id"] for r in got}) == len(got), f"duplicates in {table}"


def test_interrupted_backfill_resumes_without_duplicates(make_connector, fake):
    pages = make_connector(page_rows=1).changes("orders", None)
    first = [next(pages), next(pages)]
    pages.close()  # the sync stops here; only these pages were committed

    rest = list(make_connector(page_rows=1).changes("orders", first[-1].cursor))

    assert_orders_complete(first + rest)
    # The finished operation's file was downloaded again, not a new operation run.
    assert len(bulk_queries(fake)) == 1


def test_resume_reruns_the_window_after_the_last_id_when_the_file_is_gone(make_connector, fake):
    pages = make_connector(page_rows=1).changes("orders", None)
    first = [next(pages)]
    pages.close()
    fake.shop.ops.clear()  # the result expired

    rest = list(make_connector(page_rows=1).changes("orders", first[-1].cursor))

    assert_orders_complete(first + rest)
    assert bulk_queries(fake)[-1].count("id:>1001") == 1


def test_completed_without_url_and_no_objects_is_zero_rows(make_connector, fake):
    fake.shop.records["customers"] = []
    pages = list(make_connector().changes("customers", None))
    assert rows(pages, "customers") == []
    status = [e for e in fake.shop.log if e["operation"] == "QuarryBulkStatus"]
    assert status, "the operation was polled"


def test_completed_without_url_but_with_objects_is_polled_again(make_connector, fake):
    fake.shop.bulk_plan = ["late_url"]
    pages = list(make_connector().changes("orders", None))
    assert_orders_complete(pages)
    assert len(bulk_queries(fake)) == 1


def test_completed_without_url_for_good_is_retried(make_connector, fake):
    fake.shop.bulk_plan = ["no_url"]
    pages = list(make_connector().changes("orders", None))
    assert_orders_complete(pages)
    assert len(bulk_queries(fake)) == 2


def test_timeout_keeps_partial_data_and_fetches_the_rest(make_connector, fake):
    # The partial file has order 1001 with its lines and 1002 without them.
    fake.shop.bulk_plan = ["timeout_partial:1"]
    pages = list(make_connector().changes("orders", None))
    assert_orders_complete(pages)
    first, second = bulk_queries(fake)
    assert "id:>" not in first and "id:>1001" in second


def test_internal_error_without_partial_data_is_retried(make_connector, fake):
    fake.shop.bulk_plan = ["ise_no_partial"]
    pages = list(make_connector().changes("orders", None))
    assert_orders_complete(pages)
    assert len(bulk_queries(fake)) == 2


def test_wait_cap_cancels_and_splits_the_window(make_connector, fake):
    fake.shop.bulk_plan = ["hang"]
    pages = list(make_connector(bulk_wait_cap_seconds=0.2).changes("orders", None))

    assert_orders_complete(pages)
    assert "QuarryBulkCancel" in fake.shop.operations()
    first, second = bulk_queries(fake)[:2]
    # The same start, half the span.
    assert first.split("AND")[0] == second.split("AND")[0]
    assert first.split("created_at:<")[1] > second.split("created_at:<")[1]


def test_access_denied_is_reported(make_connector, fake):
    fake.shop.bulk_plan = ["access_denied"]
    with pytest.raises(ShopifyAuthError, match="scope"):
        list(make_connector().changes("orders", None))


def test_a_running_operation_of_ours_is_adopted(make_connector, fake):
    # An interrupted sync left this exact query running on the shop.
    lo = datetime(2023, 1, 1, tzinfo=UTC)
    query = ORDERS.bulk_query(window_search(lo, NOW, None))
    with fake.shop.lock:
        fake.shop._bulk_run(query)

    pages = list(make_connector(now=lambda: NOW).changes("orders", None))

    assert_orders_complete(pages)
    assert len(fake.shop.ops) == 1


def test_access_denied_is_reported_in_parallel_too(make_connector, fake):
    fake.shop.bulk_polls_running = 0  # the operation has failed by the first poll
    fake.shop.bulk_plan = ["access_denied"]
    with pytest.raises(ShopifyAuthError, match="scope"):
        list(make_connector(api_version="2026-10").changes("orders", None))
