"""API 2026-01+: a backfill splits its range over up to five bulk operations at once, tracks
each by id, and resumes after an interruption without duplicates."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta

import pytest

from platforms.shopify.cursor import BackfillCursor, decode, iso
from tests.platforms.shopify.conftest import rows

ORDER_TABLES = ("orders", "order_lines", "refunds", "refund_lines")


@pytest.fixture
def many_orders(fake) -> int:
    """40 more orders (with their lines) spread over 2023-2026, so every window has some."""
    template = next(o for o in fake.shop.records["orders"] if o["id"].endswith("/1001"))
    start = datetime(2023, 1, 5, tzinfo=UTC)
    for n in range(40):
        order = copy.deepcopy(template)
        order["id"] = f"gid://shopify/Order/{5000 + n}"
        order["name"] = f"#{5000 + n}"
        created = iso(start + timedelta(days=n * 33))
        order["createdAt"] = order["updatedAt"] = order["processedAt"] = created
        for k, line in enumerate(order["lineItems"]):
            line["id"] = f"gid://shopify/LineItem/{60000 + 10 * n + k}"
        order["refunds"] = []
        fake.shop.records["orders"].append(order)
    return 43


def bulk_ops(fake) -> list[str]:
    return [e for e in fake.shop.operations() if e == "QuarryBulkRun"]


def table_rows(pages) -> dict[str, list[dict[str, object]]]:
    return {table: rows(pages, table) for table in ORDER_TABLES}


def test_parallel_backfill_equals_a_serial_one(make_connector, fake, many_orders):
    serial = list(make_connector(api_version="2026-10", bulk_concurrency=1).changes("orders", None))
    assert fake.shop.max_running == 1
    fake.shop.max_running = 0
    fake.shop.log.clear()

    parallel = list(make_connector(api_version="2026-10").changes("orders", None))

    assert table_rows(parallel) == table_rows(serial)
    assert len(rows(parallel, "orders")) == many_orders
    for table, got in table_rows(parallel).items():
        assert len({r["id"] for r in got}) == len(got), f"duplicates in {table}"
    # Five windows, exported at once, each read by bulkOperation(id:).
    assert fake.shop.max_running == 5
    assert len(bulk_ops(fake)) == 5
    operations = fake.shop.operations()
    assert "QuarryBulkOperation" in operations and "QuarryBulkStatus" not in operations


@pytest.mark.parametrize("code", ["LIMIT_REACHED", "OPERATION_IN_PROGRESS"])
def test_a_full_shop_makes_windows_wait_for_a_slot(make_connector, fake, many_orders, code):
    """Fewer slots than windows (another app's operations, or a lower limit): a refusal
    with either code defers the window instead of failing the backfill."""
    fake.shop.bulk_slots, fake.shop.bulk_busy_code = 2, code
    pages = list(make_connector(api_version="2026-10").changes("orders", None))
    assert len(rows(pages, "orders")) == many_orders
    assert fake.shop.max_running == 2
    assert len(bulk_ops(fake)) > 5  # refused starts were tried again


def test_versions_before_2026_01_run_one_operation_at_a_time(make_connector, fake, many_orders):
    pages = list(make_connector(api_version="2025-10").changes("orders", None))
    assert len(rows(pages, "orders")) == many_orders
    assert fake.shop.max_running == 1
    assert "QuarryBulkOperation" not in fake.shop.operations()


def test_interrupted_parallel_backfill_resumes_without_duplicates(
    make_connector, fake, many_orders
):
    pages = make_connector(api_version="2026-10", page_rows=3).changes("orders", None)
    first = [next(pages) for _ in range(4)]
    pages.close()  # the sync stops here; only these pages were committed
    cursor = decode(first[-1].cursor)
    assert isinstance(cursor, BackfillCursor)
    # The cursor names the operations exporting the windows still to emit.
    assert all(w.op for w in cursor.windows[:5])
    started = len(bulk_ops(fake))

    rest = list(
        make_connector(api_version="2026-10", page_rows=3).changes("orders", first[-1].cursor)
    )

    combined = first + rest
    assert len(rows(combined, "orders")) == many_orders
    for table, got in table_rows(combined).items():
        assert len({r["id"] for r in got}) == len(got), f"duplicates in {table}"
    # The resumed backfill adopted the operations by id: none was run again.
    assert len(bulk_ops(fake)) == started
