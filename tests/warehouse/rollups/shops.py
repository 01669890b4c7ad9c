"""Seeded orders of stores in zones that test the rollups' buckets, written to a lake the
way a sync writes them (StoreWriter pages, then the sales model with its rollups), and
changed as incremental syncs change them: updated lines, new refunds, deleted orders."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

import pyarrow as pa

from warehouse.lake import Lake
from warehouse.modelled.sales import write_store_sales
from warehouse.pages import ChangePage
from warehouse.query import StoreInfo
from warehouse.schemas import TABLES
from warehouse.writer import StoreWriter, upsert_rows

ACCOUNT_ZONE = "America/New_York"
ACCOUNT_CURRENCY = "USD"
# Odd offsets (Kathmandu +5:45, Caracas -4:30 until 2016-05-01, Lord Howe +10:30 with a
# 30-minute DST), DST zones on either side of the equator, and a zero-decimal currency.
STORES = {
    "st_ny": StoreInfo("New York", "USD", "America/New_York"),
    "st_lh": StoreInfo("Lord Howe", "AUD", "Australia/Lord_Howe"),
    "st_ca": StoreInfo("Caracas", "EUR", "America/Caracas"),
    "st_kt": StoreInfo("Kathmandu", "JPY", "Asia/Kathmandu"),
    "st_be": StoreInfo("Berlin", "EUR", "Europe/Berlin"),
}
# Two eras: Caracas leaving -4:30 (2016-05-01), and a northern and southern DST year.
ERAS = (
    (datetime(2016, 4, 1, tzinfo=UTC), datetime(2016, 6, 1, tzinfo=UTC)),
    (datetime(2024, 9, 1, tzinfo=UTC), datetime(2025, 5, 1, tzinfo=UTC)),
)
NOW = datetime(2025, 5, 20, 15, 0, tzinfo=UTC)
PRODUCTS = [
    ("Mug", "Kitchen", "Acme"),
    ("Tee", "Apparel", "Globex"),
    ("Hoodie", "Apparel", "Globex"),
    ("Poster", "Paper", None),
    ("Socks", None, "Acme"),
]
CHANNELS = ["Online Store", "Point of Sale", "Shop"]
COUNTRIES = ["US", "DE", "NP", "AU", None]


def _money(rng: random.Random, currency: str, low: int, high: int) -> Decimal:
    if currency == "JPY":
        return Decimal(rng.randint(low, high) * 100)
    return Decimal(rng.randint(low * 100, high * 100)) / 100


def _instant(rng: random.Random, zone: ZoneInfo) -> datetime:
    start, end = rng.choice(ERAS)
    at = start + timedelta(seconds=rng.randrange(int((end - start).total_seconds())))
    if rng.random() < 0.25:
        # Near a local midnight of the store: the edges of its days.
        local = at.astimezone(zone).replace(hour=0, minute=0, second=0, microsecond=0)
        at = local.astimezone(UTC) + timedelta(seconds=rng.choice([-1, 0, 1, 1799, 2700]))
    return at


@dataclass
class Order:
    row: dict[str, Any]
    lines: list[dict[str, Any]] = field(default_factory=list)
    refunds: list[dict[str, Any]] = field(default_factory=list)
    refund_lines: list[dict[str, Any]] = field(default_factory=list)


class Shop:
    """One store's orders, kept in memory, written to the lake page by page."""

    def __init__(self, store_id: str, seed: int, count: int, info: StoreInfo | None = None) -> None:
        self.store_id = store_id
        self.info = info or STORES[store_id]
        self.zone = ZoneInfo(self.info.timezone)
        self.rng = random.Random(seed)
        self.orders: dict[str, Order] = {}
        self.serial = 0
        for _ in range(count):
            self.new_order()

    # ---- generation ----

    def new_order(self) -> Order:
        rng, cur, store = self.rng, self.info.currency, self.store_id
        self.serial += 1
        oid = f"{store}-o{self.serial}"
        at = _instant(rng, self.zone)
        order = Order(
            {
                "id": oid, "store_id": store, "order_name": f"#{self.serial}",
                "created_at": at, "updated_at": at, "processed_at": at,
                "cancelled_at": at + timedelta(days=1) if rng.random() < 0.05 else None,
                "currency": cur, "customer_id": f"c{rng.randint(1, 25)}" if rng.random() > 0.1
                else None, "sales_channel": rng.choice(CHANNELS),
                "billing_country": rng.choice(COUNTRIES),
                "total_duties": _money(rng, cur, 1, 5) if rng.random() < 0.1 else Decimal(0),
                "total_additional_fees": _money(rng, cur, 1, 3) if rng.random() < 0.1
                else Decimal(0),
            }
        )  # fmt: skip
        for k in range(rng.randint(1, 3)):
            title, type_, vendor = rng.choice(PRODUCTS)
            quantity = rng.randint(1, 3)
            price = _money(rng, cur, 3, 80)
            order.lines.append(
                {
                    "id": f"{oid}-l{k}", "store_id": store, "order_id": oid,
                    "product_id": f"p_{title}", "variant_id": f"v_{title}",
                    "product_title": title, "product_type": type_, "product_vendor": vendor,
                    "variant_title": None, "sku": None, "quantity": quantity, "price": price,
                    "discount": _money(rng, cur, 0, 2) if rng.random() < 0.3 else Decimal(0),
                    "tax": (price * quantity * Decimal("0.07")).quantize(
                        Decimal(1) if cur == "JPY" else Decimal("0.01")),
                    "cost": None if rng.random() < 0.2 else (price * Decimal("0.4")).quantize(
                        Decimal(1) if cur == "JPY" else Decimal("0.01")),
                }
            )  # fmt: skip
        if rng.random() < 0.3:
            self.refund(order)
        self.total(order)
        self.orders[oid] = order
        return order

    def refund(self, order: Order) -> None:
        rng = self.rng
        line = rng.choice(order.lines)
        at = order.row["processed_at"] + timedelta(hours=rng.randint(1, 24 * 20))
        rid = f"{order.row['id']}-r{len(order.refunds)}"
        shipping = order.row.get("total_shipping") or Decimal(0)
        order.refunds.append(
            {
                "id": rid, "store_id": self.store_id, "order_id": order.row["id"],
                "created_at": at, "shipping": shipping if rng.random() < 0.3 else Decimal(0),
                "shipping_tax": Decimal(0), "duties": Decimal(0), "note": None,
            }
        )  # fmt: skip
        quantity = rng.randint(1, line["quantity"])
        order.refund_lines.append(
            {
                "id": f"{rid}-l", "store_id": self.store_id, "order_id": order.row["id"],
                "refund_id": rid, "line_id": line["id"], "quantity": quantity,
                "subtotal": line["price"] * quantity, "tax": Decimal(0),
            }
        )  # fmt: skip

    def total(self, order: Order) -> None:
        rng, cur = self.rng, self.info.currency
        row = order.row
        row.setdefault("total_shipping", _money(rng, cur, 0, 9))
        subtotal = sum((line["price"] * line["quantity"] - line["discount"]
                        for line in order.lines), Decimal(0))  # fmt: skip
        line_tax = sum((line["tax"] for line in order.lines), Decimal(0))
        row.update(
            subtotal_price=subtotal,
            total_discounts=sum((line["discount"] for line in order.lines), Decimal(0)),
            total_tax=line_tax + (Decimal(0) if cur == "JPY" else Decimal("0.35")),
            total_refunded=Decimal(0),
            line_item_count=len(order.lines),
            item_quantity=sum(line["quantity"] for line in order.lines),
        )
        row["total_price"] = (
            subtotal + row["total_shipping"] + row["total_tax"] + row["total_duties"]
            + row["total_additional_fees"]
        )  # fmt: skip

    # ---- changes, as a sync sees them ----

    def change(self, count: int) -> tuple[list[Order], list[str]]:
        """Update, refund, add and delete orders: (changed or new orders, deleted ids)."""
        rng = self.rng
        changed: dict[str, Order] = {}
        deleted: list[str] = []
        for _ in range(count):
            kind = rng.choice(["update", "refund", "new", "delete", "move"])
            ids = sorted(self.orders)
            if kind == "new" or not ids:
                order = self.new_order()
            else:
                order = self.orders[rng.choice(ids)]
                if kind == "delete":
                    del self.orders[order.row["id"]]
                    changed.pop(order.row["id"], None)
                    deleted.append(order.row["id"])
                    continue
                if kind == "update":
                    line = rng.choice(order.lines)
                    line["quantity"] = line["quantity"] + 1
                    order.row["sales_channel"] = rng.choice(CHANNELS)
                elif kind == "refund":
                    self.refund(order)
                else:  # processed at another time: its events move to other buckets
                    at = _instant(rng, self.zone)
                    order.row.update(processed_at=at, created_at=at)
                self.total(order)
            changed[order.row["id"]] = order
        return list(changed.values()), deleted

    def page(self, orders: list[Order], deleted: list[str] | None = None) -> ChangePage:
        def table(name: str, rows: list[dict[str, Any]]) -> pa.Table:
            schema = TABLES[name].schema
            return pa.Table.from_pylist(
                [{f.name: r.get(f.name) for f in schema} for r in rows], schema=schema
            )

        return ChangePage(
            {
                "orders": table("orders", [o.row for o in orders]),
                "order_lines": table("order_lines", [x for o in orders for x in o.lines]),
                "refunds": table("refunds", [x for o in orders for x in o.refunds]),
                "refund_lines": table("refund_lines", [x for o in orders for x in o.refund_lines]),
            },
            deleted or [],
        )

    @property
    def zones(self) -> dict[str, str]:
        return {"store_timezone": self.info.timezone, "account_timezone": ACCOUNT_ZONE}

    def sync_full(self, lake: Lake) -> None:
        StoreWriter(lake, self.store_id).apply(
            self.page(list(self.orders.values())), full=True, first=True
        )
        write_store_sales(lake, self.store_id, **self.zones)

    def sync_change(self, lake: Lake, count: int) -> None:
        published = lake.version()
        orders, deleted = self.change(count)
        StoreWriter(lake, self.store_id).apply(self.page(orders, deleted), full=False, first=True)
        ids = [o.row["id"] for o in orders] + deleted
        write_store_sales(lake, self.store_id, order_ids=ids, since=published, **self.zones)


def load_rates(lake: Lake) -> None:
    """Weekday rates per USD for every store currency over both eras (weekends take the
    Friday's, as the engine does)."""
    rows = []
    for start, end in ERAS:
        day: date = start.date() - timedelta(days=10)
        k = 0
        while day <= end.date() + timedelta(days=40):
            if day.weekday() < 5:
                k += 1
                for currency, base in (("EUR", "0.9"), ("JPY", "140"), ("AUD", "1.5")):
                    rate = Decimal(base) * (1 + Decimal(k % 29) / 1000) + Decimal("0.0000012345")
                    rows.append(
                        {"date": day, "base": "USD", "currency": currency,
                         "rate": rate.quantize(Decimal("1e-10"))}
                    )  # fmt: skip
            day += timedelta(days=1)
    schema = TABLES["exchange_rates"].schema
    upsert_rows(lake, "exchange_rates", pa.Table.from_pylist(rows, schema=schema))
