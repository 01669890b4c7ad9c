"""Differential test of the rollups: seeded queries answered from the rollups and from the
facts must agree to the cent, after a full sync and after incremental syncs with updates,
refunds, moved orders and deletions (the syncs' changes appended as signed rows); and the
rollup rows an incremental sync leaves, compacted, are those a rebuild from the facts
gives."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator
from typing import Any

import duckdb
import pytest

from quarry.errors import QuarryError
from tests.warehouse.rollups.shops import (
    ACCOUNT_CURRENCY,
    ACCOUNT_ZONE,
    NOW,
    STORES,
    Shop,
    load_rates,
)
from warehouse.lake import Lake
from warehouse.modelled.sales import write_store_sales
from warehouse.query import Limits, run_query
from warehouse.query.diagnostics import InvalidQuery
from warehouse.rollups import build
from warehouse.rollups.definitions import SETS, RollupSet
from warehouse.schemas import TABLES
from warehouse.tables import qualified
from warehouse.writer import StoreWriter

ZONES = [None, "America/New_York", "Australia/Lord_Howe", "America/Caracas",
         "Asia/Kathmandu", "Europe/Berlin", "Asia/Kolkata", "UTC"]  # fmt: skip
CURRENCIES = [None, "USD", "EUR", "JPY", "AUD"]
ADDITIVE = ["total_sales", "net_sales", "gross_sales", "discounts", "returns", "taxes",
            "shipping_charges", "duties", "additional_fees", "orders", "net_items_sold",
            "ordered_item_quantity", "returned_item_quantity", "average_order_value",
            "gross_profit", "gross_margin", "net_sales_with_cost_recorded",
            "total_sales_reversals", "tax_reversals", "shipping_reversals",
            "cost_of_goods_sold"]  # fmt: skip
OTHER = ["customers", "count_distinct(customer_id)", "max(total_sales)"]
DIMS = ["store", "sales_channel", "billing_country", "product_title", "product_type"]
GRAINS = ["hour", "day", "week", "month", "quarter", "year", "hour_of_day", "day_of_week",
          "month_of_year", "week_of_year"]  # fmt: skip
LINEAR = {"hour", "day", "week", "month", "quarter", "year"}
# Windows in both eras, some over DST changes and Caracas's 2016-05-01.
WINDOWS = [
    ("2016-04-25", "2016-05-05"), ("2016-04-01", "2016-05-31"), ("2016-05-01", "2016-05-01"),
    ("2024-10-01", "2024-10-31"), ("2024-10-05", "2024-10-07"), ("2024-11-01", "2024-11-04"),
    ("2025-03-08", "2025-03-10"), ("2025-03-29", "2025-04-07"), ("2024-09-01", "2025-04-30"),
    ("2025-01-01", "2025-03-31"), ("2024-12-30", "2024-12-31"),
]  # fmt: skip
SHORT = {w for w in WINDOWS if w[0][:7] == w[1][:7] and int(w[1][8:]) - int(w[0][8:]) <= 10}


def queries(seed: int, count: int) -> Iterator[tuple[str, dict[str, Any]]]:
    """(query text, run options): every grain, odd zones, currencies, comparisons, TOP,
    totals, group totals, running totals, store filters."""
    rng = random.Random(seed)
    for _ in range(count):
        metrics = rng.sample(ADDITIVE, rng.randint(1, 3))
        if rng.random() < 0.1:
            metrics.append(rng.choice(OTHER))
        window = rng.choice(WINDOWS)
        grain = rng.choice(GRAINS) if rng.random() < 0.7 else None
        if grain == "hour" and window not in SHORT:
            window = ("2025-03-08", "2025-03-10")
        dims = rng.sample(DIMS, rng.choice([0, 0, 1, 1, 2]))
        text = f"FROM sales SHOW {', '.join(metrics)}"
        top = ""
        if dims and rng.random() < 0.2:
            top = f"{rng.choice(['', 'ONLY '])}TOP {rng.randint(1, 3)} "
        if dims:
            shown = [*dims[:-1], top + dims[-1]]
            text += f" GROUP BY {', '.join(shown)}"
            if grain is not None:
                text += f", {grain}"
        elif grain is not None:
            text += f" TIMESERIES {grain}"
        if rng.random() < 0.25:
            text += " WHERE " + rng.choice(
                [
                    "store = 'Berlin'",
                    "store IN ('New York', 'Kathmandu')",
                    "sales_channel = 'Online Store'",
                    "billing_country != 'US'",
                    "product_title IN ('Mug', 'Tee')",
                    "billing_country IS NULL",
                ]
            )
        text += f" SINCE {window[0]} UNTIL {window[1]}"
        if rng.random() < 0.2:
            text += " COMPARE TO " + rng.choice(["previous_period", "previous_year"])
        modifiers = []
        if rng.random() < 0.25:
            modifiers.append("TOTALS")
        if len(dims) >= 2 and "COMPARE" not in text and rng.random() < 0.3:
            modifiers.append("GROUP_TOTALS")
        if grain in LINEAR and rng.random() < 0.3:
            modifiers.append("CUMULATIVE_VALUES")
        if rng.random() < 0.1:
            modifiers.append("PERCENT_CHANGE")
        zone, currency = rng.choice(ZONES), rng.choice(CURRENCIES)
        options: dict[str, Any] = {}
        if rng.random() < 0.35:
            # One store's or two same-zone stores' days in their own zone: the day sets.
            store_id = rng.choice(sorted(STORES))
            zone = STORES[store_id].timezone
            if "WHERE" in text or rng.random() < 0.5:
                options["store_ids"] = [store_id]
            else:
                text = text.replace(
                    f" SINCE {window[0]}",
                    f" WHERE store = '{STORES[store_id].name}' SINCE {window[0]}",
                )
        if zone is not None and rng.random() < 0.5:
            modifiers.append(f"TIMEZONE '{zone}'")
            zone = None
        if currency is not None:
            modifiers.append(f"CURRENCY '{currency}'")
        if modifiers:
            text += " WITH " + ", ".join(modifiers)
        if dims and not top and rng.random() < 0.3:
            text += f" ORDER BY {metrics[0].split('(')[0]} DESC LIMIT {rng.randint(1, 5)}"
        options["time_zone"] = zone
        if "store_ids" not in options and rng.random() < 0.2:
            options["store_ids"] = rng.sample(sorted(STORES), rng.randint(1, 3))
        yield text, options


def _answer(cursor: duckdb.DuckDBPyConnection, text: str, rollups: bool, **options: Any) -> Any:
    try:
        result = run_query(
            cursor,
            text,
            stores=STORES,
            account_currency=ACCOUNT_CURRENCY,
            account_timezone=ACCOUNT_ZONE,
            now=NOW,
            limits=Limits(rollups=rollups),
            **options,
        )
    except (InvalidQuery, QuarryError) as exc:
        return ("error", type(exc).__name__, str(exc)), "facts"
    body = result.public()
    body["derived"] = result.derived
    body["remainders"] = result.remainders
    return body, result.source_table or "facts"


@pytest.fixture
def shops(lake: Lake) -> list[Shop]:
    load_rates(lake)
    out = [Shop(store_id, seed=k, count=90) for k, store_id in enumerate(STORES)]
    for shop in out:
        shop.sync_full(lake)
    return out


def _reader(lake: Lake) -> duckdb.DuckDBPyConnection:
    """A cursor where every warehouse table is read by its plain name, as the API's are."""
    cursor = lake.cursor()
    for name in TABLES:
        cursor.execute(f"CREATE OR REPLACE TEMP VIEW {name} AS SELECT * FROM {qualified(name)}")
    return cursor


def _compare(lake: Lake, seed: int, count: int) -> Counter[str]:
    cursor = _reader(lake)
    sources: Counter[str] = Counter()
    try:
        for text, options in queries(seed, count):
            facts, _ = _answer(cursor, text, False, **options)
            rolled, source = _answer(cursor, text, True, **options)
            assert rolled == facts, f"{text} {options} answered from {source}"
            sources[source] += 1
    finally:
        cursor.close()
    return sources


def _rollup_rows(lake: Lake, rollup: RollupSet) -> list[tuple[Any, ...]]:
    """A set's rows; a day row's instant (any event's of the day) left out."""
    columns = [c for c in TABLES[rollup.table].schema.names if c not in rollup.key_columns]
    columns = [*rollup.keys, *columns]
    cursor = lake.cursor()
    try:
        sql = f"SELECT {', '.join(columns)} FROM {qualified(rollup.table)}"
        return sorted(cursor.execute(sql).fetchall(), key=repr)
    finally:
        cursor.close()


def test_rollups_answer_as_the_facts_do_through_incremental_syncs(
    lake: Lake, shops: list[Shop]
) -> None:
    first = _compare(lake, seed=1, count=90)
    rng = random.Random(5)
    for _ in range(2):
        for shop in shops:
            shop.sync_change(lake, count=rng.randint(3, 12))
    # The syncs appended their changes: keys held by several rows, which readers sum.
    assert build.stores_to_compact(lake) == sorted(STORES)
    second = _compare(lake, seed=2, count=90)
    # The test means something only if the rollups answer much of it, each set some.
    for sources in (first, second):
        assert sum(n for s, n in sources.items() if s != "facts") >= 25, sources
    assert {r.table for r in SETS} <= set(first + second), first + second

    # Compacted, the rows the syncs left are those maintenance rebuilds from the facts,
    # and they answer as before.
    with lake.transaction(author=list(STORES), message="compact") as cursor:
        build.compact(cursor, list(STORES))
    assert build.stores_to_compact(lake) == []
    compacted = {r.table: _rollup_rows(lake, r) for r in SETS}
    assert _compare(lake, seed=2, count=90) == second
    assert build.rebuild(lake) == sorted(STORES)
    assert {r.table: _rollup_rows(lake, r) for r in SETS} == compacted


def test_rollups_off_reads_the_facts(lake: Lake, shops: list[Shop]) -> None:
    cursor = _reader(lake)
    try:
        text = (
            "FROM sales SHOW total_sales, orders TIMESERIES month SINCE 2024-09-01 UNTIL 2025-04-30"
        )
        on, source = _answer(cursor, text, True)
        off, off_source = _answer(cursor, text, False)
    finally:
        cursor.close()
    assert (source, off_source) == ("sales_rollup_hours", "facts")
    assert on == off


def test_keys_a_change_empties_answer_as_the_facts_do(lake: Lake, shops: list[Shop]) -> None:
    """Appended changes can leave keys whose rows net to no events: every order of a
    billing country deleted is no group (not a group of zeros), and a total over them
    alone is a total over no events. Costs removed from a country's orders move
    the presence counts the nullable cost sums keep."""
    shop = shops[0]
    gone = [o for o in shop.orders.values() if o.row["billing_country"] == "DE"]
    uncosted = [o for o in shop.orders.values() if o.row["billing_country"] == "US"]
    assert gone and uncosted
    for order in uncosted:
        for line in order.lines:
            line["cost"] = None
    published = lake.version()
    deleted = [o.row["id"] for o in gone]
    for oid in deleted:
        del shop.orders[oid]
    StoreWriter(lake, shop.store_id).apply(shop.page(uncosted, deleted), full=False, first=True)
    ids = [o.row["id"] for o in uncosted] + deleted
    write_store_sales(lake, shop.store_id, order_ids=ids, since=published, **shop.zones)

    window = "SINCE 2024-09-01 UNTIL 2025-04-30"
    options = {"store_ids": [shop.store_id]}
    cursor = _reader(lake)
    try:
        answers = []
        for text in (
            f"FROM sales SHOW total_sales, cost_of_goods_sold, orders GROUP BY billing_country "
            f"{window} WITH TOTALS",
            f"FROM sales SHOW total_sales, orders WHERE billing_country = 'DE' {window} "
            "WITH TOTALS",
            f"FROM sales SHOW total_sales WHERE billing_country = 'DE' TIMESERIES month {window}",
        ):
            facts, _ = _answer(cursor, text, False, **options)
            rolled, source = _answer(cursor, text, True, **options)
            assert source != "facts", text
            assert rolled == facts, text
            answers.append(rolled)
    finally:
        cursor.close()
    by_country, only_de, months = answers
    assert "DE" not in {r["billing_country"] for r in by_country["rows"]}
    assert [r["orders"] for r in only_de["rows"]] == [0]
    assert {r["total_sales"] for r in months["rows"]} == {0}
