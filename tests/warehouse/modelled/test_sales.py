"""The sales model on hand-made orders, against figures computed by hand."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest

from warehouse.lake import Lake
from warehouse.modelled.sales import (
    ORDER_TABLES,
    sales_from_tables,
    store_sales,
    write_store_sales,
)
from warehouse.pages import ChangePage
from warehouse.schemas import SALES, TABLES
from warehouse.writer import StoreWriter

D = Decimal
STORE = "st_test"


def _table(name: str, rows: list[dict[str, Any]]) -> pa.Table:
    schema = TABLES[name].schema
    full = [{field.name: row.get(field.name) for field in schema} for row in rows]
    return pa.Table.from_pylist(full, schema=schema)


def _utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


def _order(**values: Any) -> dict[str, Any]:
    base = {
        "store_id": STORE, "currency": "USD", "customer_id": "cus_1",
        "sales_channel": "Online Store", "billing_country": "US", "billing_region": "NY",
        "billing_city": "New York", "total_discounts": D("0"), "total_shipping": D("0"),
        "total_tax": D("0"), "total_duties": D("0"), "total_additional_fees": D("0"),
        "total_refunded": D("0"),
    }  # fmt: skip
    return base | values


# Order 1: two lines, a discount, shipping with its tax, duties, a fee, and one refund that
# returns one unit and gives back the shipping and the duties.
#   l1: 19.99 x 3 = 59.97, discount 6.00, tax 5.40   l2: 5.00 x 1, tax 0.50
#   shipping 7.50 + shipping tax 0.75, duties 2.00, fee 1.25
#   subtotal 58.97, total_tax 6.65, total_price 58.97 + 7.50 + 6.65 + 2.00 + 1.25 = 76.37
#   refund: 1 x l1 at 17.99 (its discount share off) + tax 1.80, shipping 7.50 + 0.75 tax,
#   duties 2.00: total_refunded 30.04
# Order 2: processed_at missing (created_at used), one line 100.00 x 2, nothing else.
ORDERS = [
    _order(
        id="o1", order_name="#1001", created_at=_utc(2024, 3, 10, 11, 58),
        processed_at=_utc(2024, 3, 10, 12, 0), subtotal_price=D("58.97"),
        total_discounts=D("6.00"), total_shipping=D("7.50"), total_tax=D("6.65"),
        total_duties=D("2.00"), total_additional_fees=D("1.25"), total_price=D("76.37"),
        total_refunded=D("30.04"), line_item_count=2, item_quantity=4,
        shipping_country="CA", shipping_region="ON", shipping_city="Toronto",
        discount_codes="SAVE10",
    ),
    _order(
        id="o2", order_name="#1002", created_at=_utc(2024, 11, 3, 5, 30), processed_at=None,
        customer_id=None, subtotal_price=D("200.00"), total_price=D("200.00"),
        line_item_count=1, item_quantity=2, cancelled_at=_utc(2024, 11, 4),
    ),
]  # fmt: skip
PRODUCT = {"product_type": "Tea", "product_vendor": "Leaf & Co"}
LINES = [
    {"id": "l1", "store_id": STORE, "order_id": "o1", "product_id": "p1",
     "variant_id": "v1", "product_title": "Green tea", "variant_title": "250 g",
     "sku": "GT-250", "quantity": 3, "price": D("19.99"), "discount": D("6.00"),
     "tax": D("5.40"), "cost": D("8.00")} | PRODUCT,
    {"id": "l2", "store_id": STORE, "order_id": "o1", "product_id": "p2",
     "variant_id": "v2", "product_title": "Mug", "variant_title": None, "sku": "MUG",
     "quantity": 1, "price": D("5.00"), "discount": D("0.00"), "tax": D("0.50"),
     "cost": None} | PRODUCT,
    {"id": "l3", "store_id": STORE, "order_id": "o2", "product_id": "p3",
     "variant_id": "v3", "product_title": "Teapot", "variant_title": "Large",
     "sku": "TP-L", "quantity": 2, "price": D("100.00"), "discount": D("0.00"),
     "tax": D("0.00"), "cost": D("40.00")} | PRODUCT,
]  # fmt: skip
REFUNDS = [
    {"id": "r1", "store_id": STORE, "order_id": "o1", "created_at": _utc(2024, 3, 15, 9, 30),
     "shipping": D("7.50"), "shipping_tax": D("0.75"), "duties": D("2.00"), "note": None},
]  # fmt: skip
REFUND_LINES = [
    {"id": "rl1", "store_id": STORE, "order_id": "o1", "refund_id": "r1", "line_id": "l1",
     "quantity": 1, "subtotal": D("17.99"), "tax": D("1.80")},
]  # fmt: skip

# Each event's figures; a metric not named is zero.
EXPECTED: dict[str, dict[str, Any]] = {
    "l1.o": {"event": "order/product", "ordered_item_quantity": 3, "gross_sales": "59.97",
             "discounts": "-6.00", "net_sales": "53.97", "taxes": "5.40",
             "total_sales": "59.37"},
    "l2.o": {"event": "order/product", "ordered_item_quantity": 1, "gross_sales": "5.00",
             "net_sales": "5.00", "taxes": "0.50", "total_sales": "5.50"},
    "o1.shipping.o": {"event": "order/shipping", "shipping_charges": "7.50", "taxes": "0.75",
                      "total_sales": "8.25"},
    "o1.duty.o": {"event": "order/duty", "duties": "2.00", "total_sales": "2.00"},
    "o1.fee.o": {"event": "order/fee", "additional_fees": "1.25", "total_sales": "1.25"},
    "rl1.r": {"event": "return/product", "returned_item_quantity": -1, "returns": "-17.99",
              "net_sales": "-17.99", "taxes": "-1.80", "total_sales": "-19.79"},
    "r1.shipping.r": {"event": "return/shipping", "shipping_charges": "-7.50",
                      "taxes": "-0.75", "total_sales": "-8.25"},
    "r1.duty.r": {"event": "return/duty", "duties": "-2.00", "total_sales": "-2.00"},
    "l3.o": {"event": "order/product", "ordered_item_quantity": 2, "gross_sales": "200.00",
             "net_sales": "200.00", "total_sales": "200.00"},
    # o2 was cancelled, never refunded: Shopify's sales reports count a cancellation as a
    # return on the day it was cancelled (help.shopify.com/manual/reports-and-analytics/
    # shopify-reports/report-types/sales-report, "Canceled orders").
    "l3.c": {"event": "return/product", "returned_item_quantity": -2, "returns": "-200.00",
             "net_sales": "-200.00", "total_sales": "-200.00"},
}  # fmt: skip
QUANTITIES = ("ordered_item_quantity", "returned_item_quantity")
MONEY = (
    "gross_sales", "discounts", "returns", "net_sales", "shipping_charges", "duties",
    "additional_fees", "taxes", "total_sales",
)  # fmt: skip


@pytest.fixture(scope="module")
def sales() -> pa.Table:
    tables = {
        "orders": _table("orders", ORDERS),
        "order_lines": _table("order_lines", LINES),
        "refunds": _table("refunds", REFUNDS),
        "refund_lines": _table("refund_lines", REFUND_LINES),
    }
    return sales_from_tables(
        tables, store_timezone="America/New_York", account_timezone="Europe/Berlin"
    )


def test_one_row_per_event_with_hand_computed_figures(sales: pa.Table) -> None:
    assert sales.schema == SALES.schema
    rows = {row["id"]: row for row in sales.to_pylist()}
    assert set(rows) == set(EXPECTED)
    for event_id, expected in EXPECTED.items():
        row = rows[event_id]
        assert f"{row['event_type']}/{row['line_type']}" == expected["event"], event_id
        for name in QUANTITIES:
            assert row[name] == expected.get(name, 0), (event_id, name)
        for name in MONEY:
            assert row[name] == D(expected.get(name, "0")), (event_id, name)
        assert row["net_items_sold"] == row["ordered_item_quantity"] + row["returned_item_quantity"]


def test_totals_reconcile_with_the_orders(sales: pa.Table) -> None:
    totals: dict[str, Decimal] = {}
    for row in sales.to_pylist():
        totals[row["order_id"]] = totals.get(row["order_id"], D(0)) + row["total_sales"]
    for order in ORDERS:
        owed = order["total_price"] - order["total_refunded"]
        # A cancelled order's sales are zero overall, as in Shopify's reports.
        assert totals[order["id"]] == (D(0) if order.get("cancelled_at") else owed)


def test_event_times_in_utc_store_and_account_zones(sales: pa.Table) -> None:
    rows = {row["id"]: row for row in sales.to_pylist()}
    # 12:00 UTC on the day New York moved to summer time: 08:00 there, 13:00 in Berlin.
    assert rows["l1.o"]["happened_at"] == _utc(2024, 3, 10, 12, 0)
    assert rows["l1.o"]["happened_at_store"] == datetime(2024, 3, 10, 8, 0)
    assert rows["l1.o"]["happened_at_account"] == datetime(2024, 3, 10, 13, 0)
    # A return happens when refunded, not when ordered.
    assert rows["rl1.r"]["happened_at"] == _utc(2024, 3, 15, 9, 30)
    assert rows["rl1.r"]["happened_at_store"] == datetime(2024, 3, 15, 5, 30)
    # No processed_at: created_at. 05:30 UTC is 01:30 EDT, half an hour before New York
    # left summer time.
    assert rows["l3.o"]["happened_at"] == _utc(2024, 11, 3, 5, 30)
    assert rows["l3.o"]["happened_at_store"] == datetime(2024, 11, 3, 1, 30)
    assert rows["l3.o"]["happened_at_account"] == datetime(2024, 11, 3, 6, 30)
    # A cancellation's reversal happens when the order was cancelled.
    assert rows["l3.c"]["happened_at"] == _utc(2024, 11, 4)


def test_order_and_product_attributes_are_carried(sales: pa.Table) -> None:
    rows = {row["id"]: row for row in sales.to_pylist()}
    line = rows["rl1.r"]
    assert (line["product_id"], line["product_title"], line["product_variant_sku"]) == (
        "p1",
        "Green tea",
        "GT-250",
    )
    assert (line["order_name"], line["store_id"], line["customer_id"]) == ("#1001", STORE, "cus_1")
    assert rows["o1.shipping.o"]["product_id"] is None
    assert rows["l3.o"]["customer_id"] is None
    assert {r["currency"] for r in rows.values()} == {"USD"}


def test_no_orders_no_events() -> None:
    empty = {name: TABLES[name].schema.empty_table() for name in ORDER_TABLES}
    result = sales_from_tables(empty, store_timezone="UTC", account_timezone="UTC")
    assert result.num_rows == 0
    assert result.schema == SALES.schema


def test_store_sales_reads_the_newest_lake_tables(lake: Lake, sales: pa.Table) -> None:
    # One order per commit: the events come from every commit of the store's rows.
    writer = StoreWriter(lake, STORE)
    for index, order in enumerate(ORDERS):
        page = ChangePage(
            {
                "orders": _table("orders", [order]),
                "order_lines": _table(
                    "order_lines", [r for r in LINES if r["order_id"] == order["id"]]
                ),
                "refunds": _table("refunds", [r for r in REFUNDS if r["order_id"] == order["id"]]),
                "refund_lines": _table(
                    "refund_lines", [r for r in REFUND_LINES if r["order_id"] == order["id"]]
                ),
            }
        )
        writer.apply(page, full=True, first=index == 0)
    zones = {"store_timezone": "America/New_York", "account_timezone": "Europe/Berlin"}
    assert store_sales(lake, STORE, **zones).equals(sales)
    only_o1 = store_sales(lake, STORE, order_ids=["o1", "gone"], **zones)
    assert set(only_o1["order_id"].to_pylist()) == {"o1"}
    assert only_o1.num_rows == 8
    assert store_sales(lake, "st_other", **zones).num_rows == 0


def _rows_of(order: dict[str, Any]) -> dict[str, pa.Table]:
    return {
        "orders": _table("orders", [order]),
        "order_lines": _table("order_lines", [r for r in LINES if r["order_id"] == order["id"]]),
        "refunds": _table("refunds", [r for r in REFUNDS if r["order_id"] == order["id"]]),
        "refund_lines": _table(
            "refund_lines", [r for r in REFUND_LINES if r["order_id"] == order["id"]]
        ),
    }


def _sorted(table: pa.Table) -> pa.Table:
    return table.sort_by([("id", "ascending")])


def test_an_incremental_rebuild_since_a_version_equals_a_full_one(lake: Lake) -> None:
    # The sales of orders changed after a version are read from the rows written after it;
    # a deleted order's events go, and a pending order whose rows are older than the
    # version (nothing writes one, but the model must not lose it) is read whole.
    zones = {"store_timezone": "America/New_York", "account_timezone": "Europe/Berlin"}
    writer = StoreWriter(lake, STORE)
    for index, order in enumerate(ORDERS):
        writer.apply(ChangePage(_rows_of(order)), full=True, first=index == 0)
    write_store_sales(lake, STORE, **zones)
    published = lake.version()
    changed, deleted = ORDERS
    page = ChangePage(_rows_of(changed | {"tags": "vip"}), [deleted["id"]])
    writer.apply(page, full=False, first=True)

    pending = [changed["id"], deleted["id"]]
    written = write_store_sales(lake, STORE, order_ids=pending, since=published, **zones)
    assert _sorted(_lake_sales(lake)).equals(_sorted(store_sales(lake, STORE, **zones)))
    assert written == _lake_sales(lake).num_rows > 0
    assert set(_lake_sales(lake)["order_id"].to_pylist()) == {changed["id"]}

    later = lake.version()
    again = write_store_sales(lake, STORE, order_ids=[changed["id"]], since=later, **zones)
    assert again == written
    assert _sorted(_lake_sales(lake)).equals(_sorted(store_sales(lake, STORE, **zones)))


def _lake_sales(lake: Lake) -> pa.Table:
    cursor = lake.cursor()
    try:
        rows = cursor.execute("SELECT * FROM lake.sales WHERE store_id = ?", [STORE])
        return rows.to_arrow_table().cast(SALES.schema)
    finally:
        cursor.close()


def test_costs_addresses_codes_and_cancellation_are_carried(sales: pa.Table) -> None:
    """cost_of_goods_sold is the line's unit cost times the units ordered (less those
    returned); a line without a cost, or without a product, has none recorded. The order's
    shipping address, discount codes and cancellation are on each of its events."""
    rows = {row["id"]: row for row in sales.to_pylist()}
    costs = {k: (r["cost_of_goods_sold"], r["cost_is_recorded"]) for k, r in rows.items()}
    assert costs == {
        "l1.o": (D("24.00"), True),
        "l2.o": (None, False),
        "rl1.r": (D("-8.00"), True),
        "l3.o": (D("80.00"), True),
        "l3.c": (D("-80.00"), True),
        "o1.shipping.o": (None, False),
        "o1.duty.o": (None, False),
        "o1.fee.o": (None, False),
        "r1.shipping.r": (None, False),
        "r1.duty.r": (None, False),
    }
    for event_id, row in rows.items():
        first = row["order_id"] == "o1"
        assert row["shipping_country"] == ("CA" if first else None), event_id
        assert row["shipping_city"] == ("Toronto" if first else None), event_id
        assert row["discount_code"] == ("SAVE10" if first else None), event_id
        assert row["order_cancelled"] is (not first), event_id


def test_a_cancellation_reverses_what_the_refunds_left() -> None:
    """o1 cancelled after its refund: the refund keeps its own day and figures, and the
    cancellation reverses the rest, line by line, with the order's fee, so the order's
    sales are zero overall (Shopify: "your sales numbers are zero for that order
    overall")."""
    cancelled = ORDERS[0] | {"cancelled_at": _utc(2024, 3, 20, 10, 0)}
    tables = {
        "orders": _table("orders", [cancelled]),
        "order_lines": _table("order_lines", [r for r in LINES if r["order_id"] == "o1"]),
        "refunds": _table("refunds", REFUNDS),
        "refund_lines": _table("refund_lines", REFUND_LINES),
    }
    sales = sales_from_tables(tables, store_timezone="UTC", account_timezone="UTC")
    rows = {row["id"]: row for row in sales.to_pylist()}
    # What the refund left: l1's 2 units (59.97 - 6.00 - 17.99 = 35.98, tax 5.40 - 1.80),
    # all of l2, the fee; shipping and duties were refunded in full.
    assert set(rows) == set(EXPECTED) - {"l3.o", "l3.c"} | {"l1.c", "l2.c", "o1.fee.c"}
    expected = {
        "l1.c": (-2, D("-35.98"), D("-3.60"), D("-16.00"), D("0")),
        "l2.c": (-1, D("-5.00"), D("-0.50"), None, D("0")),
        "o1.fee.c": (0, D("0"), D("0"), None, D("-1.25")),
    }
    for event_id, (units, returns, taxes, cost, fees) in expected.items():
        row = rows[event_id]
        assert row["event_type"] == "return" and row["happened_at"] == _utc(2024, 3, 20, 10)
        assert (row["returned_item_quantity"], row["returns"], row["taxes"]) == (
            units,
            returns,
            taxes,
        ), event_id
        assert (row["cost_of_goods_sold"], row["additional_fees"]) == (cost, fees), event_id
    assert sum((r["total_sales"] for r in rows.values()), D(0)) == D(0)
    assert sum(r["net_items_sold"] for r in rows.values()) == 0
