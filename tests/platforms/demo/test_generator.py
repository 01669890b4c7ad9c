"""The seeded data: deterministic, in the warehouse schemas, internally consistent, shaped
like a shop's (sizes, channels, statuses, a weekly cycle and Black Friday)."""

from __future__ import annotations

from datetime import date

import pandas as pd
import pytest

from platforms.demo.generator import generate_store
from platforms.demo.timeline import black_friday
from tests.platforms.demo.checks import check_all, frame
from tests.platforms.demo.conftest import ANCHOR, ORDERS, SeededAccount

CLOCK = pd.Timestamp(ANCHOR, tz="UTC")
START = CLOCK - pd.Timedelta(days=730)


def test_same_seed_and_anchor_give_identical_tables() -> None:
    first = generate_store(11, 2, "st_fixed", 1_500, date(2025, 6, 1))
    again = generate_store(11, 2, "st_fixed", 1_500, date(2025, 6, 1))
    assert first.tables.keys() == again.tables.keys()
    for name in first.tables:
        assert first.tables[name].equals(again.tables[name]), name
    assert first.state == again.state


def test_another_seed_or_anchor_gives_other_data() -> None:
    base = generate_store(11, 0, "st_fixed", 1_000, date(2025, 6, 1)).tables["orders"]
    reseeded = generate_store(12, 0, "st_fixed", 1_000, date(2025, 6, 1)).tables["orders"]
    moved = generate_store(11, 0, "st_fixed", 1_000, date(2025, 6, 2)).tables["orders"]
    assert not base.equals(reseeded)
    assert not base["created_at"].equals(moved["created_at"])


def test_every_store_holds_its_invariants(seeded: SeededAccount) -> None:
    for store in seeded.stores:
        check_all(seeded.tables(store.id), store.id, store.currency == "JPY", CLOCK)


def test_stores_follow_the_templates(seeded: SeededAccount) -> None:
    assert [(s.currency, s.timezone) for s in seeded.stores] == [
        ("USD", "America/New_York"),
        ("EUR", "Europe/Berlin"),
        ("JPY", "Asia/Tokyo"),
    ]
    for store in seeded.stores:
        tables = seeded.tables(store.id)
        for name in ("orders", "customers", "products", "draft_orders"):
            assert set(tables[name]["currency"].to_pylist()) == {store.currency}


def test_sizes_scale_with_orders(seeded: SeededAccount) -> None:
    tables = [seeded.tables(s.id) for s in seeded.stores]
    orders = sum(t["orders"].num_rows for t in tables)
    assert orders == ORDERS
    lines = sum(t["order_lines"].num_rows for t in tables)
    customers = sum(t["customers"].num_rows for t in tables)
    drafts = sum(t["draft_orders"].num_rows for t in tables)
    assert 2.3 < lines / orders < 2.7
    assert 0.16 < customers / orders < 0.24
    assert 0.015 < drafts / orders < 0.025
    for t in tables:
        assert t["products"].num_rows == max(50, t["orders"].num_rows // 100)
        assert 1 <= t["product_variants"].num_rows / t["products"].num_rows <= 5


def test_orders_span_two_years_before_the_anchor(seeded: SeededAccount) -> None:
    created = pd.concat([frame(seeded.tables(s.id)["orders"])["created_at"] for s in seeded.stores])
    assert created.min() >= START
    assert created.max() < CLOCK
    assert created.min() < START + pd.Timedelta(days=7)
    assert created.max() > CLOCK - pd.Timedelta(days=2)


def test_statuses_channels_and_places_look_like_a_shop(seeded: SeededAccount) -> None:
    orders = pd.concat([frame(seeded.tables(s.id)["orders"]) for s in seeded.stores])
    financial = orders["financial_status"].value_counts(normalize=True)
    assert financial["paid"] > 0.8
    assert {"partially_refunded", "refunded", "voided", "pending", "authorized"} <= set(
        financial.index
    )
    assert set(orders["fulfillment_status"]) == {"fulfilled", "partial", "unfulfilled"}
    channels = orders["sales_channel"].value_counts(normalize=True)
    assert set(channels.index) == {
        "Online Store",
        "Point of Sale",
        "Shop",
        "Facebook & Instagram",
        "Draft Orders",
    }
    assert channels["Online Store"] > 0.5
    assert {"United States", "Germany", "Japan"} <= set(orders["billing_country"])
    assert orders["billing_city"].notna().all()
    assert (orders["total_duties"] > 0).any() and (orders["total_additional_fees"] > 0).any()
    assert (orders["total_discounts"] > 0).mean() > 0.1
    assert orders.loc[orders["financial_status"] == "voided", "cancelled_at"].notna().all()


def _local_days(seeded: SeededAccount) -> pd.Series:
    days = [
        frame(seeded.tables(s.id)["orders"])["created_at"].dt.tz_convert(s.timezone).dt.date
        for s in seeded.stores
    ]
    return pd.concat(days)


def test_weekends_are_busier_than_midweek(seeded: SeededAccount) -> None:
    weekday = pd.to_datetime(_local_days(seeded)).dt.dayofweek
    counts = weekday.value_counts()
    # Sunday's weight is about 1.5 times Tuesday's; with ~1,200 orders a weekday the noise
    # is a few percent.
    assert counts[6] > 1.25 * counts[1]
    assert counts[5] > counts[2]


@pytest.mark.parametrize("year", [2024, 2025])
def test_black_friday_is_the_peak(seeded: SeededAccount, year: int) -> None:
    per_day = _local_days(seeded).value_counts()
    friday = black_friday(year)
    assert per_day[friday] > 3 * per_day.median()
    assert per_day[friday] == per_day[per_day.index.map(lambda d: d.year == year)].max()
