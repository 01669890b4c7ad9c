"""Hand-made warehouse data for the query tests, and an independent oracle in pandas.

The data is built row by row in Python (zoneinfo for local times, Decimal for money) and
loaded into DuckDB tables by their plain names, like WarehouseReader.connect exposes them.
The oracle recomputes answers from the same rows without any of warehouse.query's code.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Callable, Iterable
from datetime import UTC, date, datetime, time, timedelta
from decimal import ROUND_HALF_UP, Decimal
from typing import Any
from zoneinfo import ZoneInfo

import duckdb
import pandas as pd
import pyarrow as pa

from warehouse.query import StoreInfo, run_query
from warehouse.schemas import CUSTOMERS, EXCHANGE_RATES, ORDERS, SALES

NY = ZoneInfo("America/New_York")
BERLIN = ZoneInfo("Europe/Berlin")
TOKYO = ZoneInfo("Asia/Tokyo")

STORES = {
    "st_main": StoreInfo("Main Street", "USD", "America/New_York"),
    "st_berlin": StoreInfo("Berlin Shop", "EUR", "Europe/Berlin"),
    "st_tokyo": StoreInfo("Tokyo Corner", "JPY", "Asia/Tokyo"),
}
# A store of the account the test key cannot read: its rows exist in the tables.
HIDDEN = StoreInfo("Secret Outlet", "USD", "America/New_York")
ACCOUNT_CURRENCY = "USD"
ACCOUNT_ZONE = "America/New_York"
NOW = datetime(2024, 4, 15, 16, 30, tzinfo=UTC)  # 12:30 in New York

PRODUCTS = ["Mug", "Tee", "Hoodie", "Cap", "Sticker", "Poster", "Socks", "Bag"]
TYPES = {
    "Mug": "Kitchen",
    "Tee": "Apparel",
    "Hoodie": "Apparel",
    "Cap": "Apparel",
    "Sticker": "Paper",
    "Poster": "Paper",
    "Socks": "Apparel",
    "Bag": None,
}
MINOR = {"USD": 2, "EUR": 2, "JPY": 0}


def _zone(store_id: str) -> ZoneInfo:
    return ZoneInfo(STORES[store_id].timezone if store_id in STORES else HIDDEN.timezone)


def _money(rng: random.Random, currency: str, low: int, high: int) -> Decimal:
    if currency == "JPY":
        return Decimal(rng.randint(low, high) * 100)
    return Decimal(rng.randint(low * 100, high * 100)) / 100


def _instants(rng: random.Random) -> list[datetime]:
    spans = [
        (datetime(2023, 3, 1, tzinfo=UTC), datetime(2023, 4, 16, tzinfo=UTC), 90),
        (datetime(2024, 2, 20, tzinfo=UTC), datetime(2024, 4, 15, 16, tzinfo=UTC), 330),
        (datetime(2024, 10, 20, tzinfo=UTC), datetime(2024, 11, 10, tzinfo=UTC), 80),
    ]
    out = []
    for start, end, n in spans:
        seconds = int((end - start).total_seconds())
        out += [start + timedelta(seconds=rng.randrange(seconds)) for _ in range(n)]
    # Edges: around New York midnights either side of the DST changes, and in Berlin's.
    out += [
        datetime(2024, 3, 10, 4, 59, 59, tzinfo=UTC),
        datetime(2024, 3, 10, 5, 0, tzinfo=UTC),
        datetime(2024, 3, 11, 3, 59, 59, tzinfo=UTC),
        datetime(2024, 3, 11, 4, 0, tzinfo=UTC),
        datetime(2024, 3, 30, 22, 59, tzinfo=UTC),
        datetime(2024, 3, 30, 23, 0, tzinfo=UTC),
        datetime(2024, 11, 3, 5, 30, tzinfo=UTC),
        datetime(2024, 11, 3, 6, 30, tzinfo=UTC),
        datetime(2024, 10, 26, 22, 30, tzinfo=UTC),
        datetime(2024, 10, 27, 0, 30, tzinfo=UTC),
    ]
    return out


def sales_rows(seed: int = 7) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    rows = []
    order_no = 1000
    store_ids = [*STORES, "st_hidden"]
    for k, at in enumerate(_instants(rng)):
        store = store_ids[k % 4] if k % 9 else rng.choice(store_ids[:3])
        currency = STORES[store].currency if store in STORES else HIDDEN.currency
        if rng.random() < 0.3 and rows and rows[-1]["store_id"] == store:
            order_id = rows[-1]["order_id"]  # a second line of the same order
        else:
            order_no += 1
            order_id = f"o{order_no}"
        is_return = rng.random() < 0.1
        product = rng.choice(PRODUCTS) if rng.random() > 0.05 else None
        qty = rng.randint(1, 4)
        gross = Decimal(0) if is_return else _money(rng, currency, 5, 120)
        discounts = Decimal(0) if is_return else -_money(rng, currency, 0, 4)
        returns = -_money(rng, currency, 5, 60) if is_return else Decimal(0)
        net = gross + discounts + returns
        shipping = Decimal(0) if is_return else _money(rng, currency, 0, 9)
        taxes = (net * Decimal("0.1")).quantize(Decimal(1).scaleb(-MINOR[currency]))
        local = at.astimezone(_zone(store)).replace(tzinfo=None)
        rows.append(
            {
                "id": f"e{k}",
                "store_id": store,
                "order_id": order_id,
                "order_name": f"#{order_id}",
                "event_type": "return" if is_return else "order",
                "line_type": "product",
                "happened_at": at,
                "happened_at_store": local,
                "happened_at_account": at.astimezone(NY).replace(tzinfo=None),
                "currency": currency,
                "customer_id": f"c{rng.randint(1, 40)}" if rng.random() > 0.1 else None,
                "product_id": None if product is None else f"p_{product}",
                "product_title": product,
                "product_type": TYPES.get(product or ""),
                "product_vendor": "Acme" if rng.random() < 0.5 else "Globex",
                "product_variant_title": None,
                "product_variant_sku": None,
                "sales_channel": rng.choice(["Online Store", "Point of Sale", "Shop"]),
                "billing_country": rng.choice(["US", "DE", "JP", "CA", None]),
                "billing_region": None,
                "billing_city": rng.choice(["Springfield", "Berlin", None]),
                "ordered_item_quantity": 0 if is_return else qty,
                "returned_item_quantity": -qty if is_return else 0,
                "net_items_sold": -qty if is_return else qty,
                "gross_sales": gross,
                "discounts": discounts,
                "returns": returns,
                "net_sales": net,
                "shipping_charges": shipping,
                "duties": Decimal(0),
                "additional_fees": Decimal(0),
                "taxes": taxes,
                "total_sales": net + shipping + taxes,
            }
        )
        rows[-1].update(_derived(k, rows[-1]))
    return rows


def _derived(k: int, row: dict[str, Any]) -> dict[str, Any]:
    """The fields issue 19 added, derived from the row without the random generator (so the
    figures every older test pins stay as they were): a cost on most product lines, the
    shipping address of orders not sold at the counter, a discount code with a discount,
    and a cancelled order now and then."""
    costed = row["product_title"] is not None and k % 6 != 0
    base = row["gross_sales"] if row["event_type"] == "order" else row["returns"]
    places = Decimal(1).scaleb(-MINOR[row["currency"]])
    shipped = row["sales_channel"] != "Point of Sale"
    return {
        "cost_of_goods_sold": (base * Decimal("0.4")).quantize(places) if costed else None,
        "cost_is_recorded": costed,
        "shipping_country": row["billing_country"] if shipped else None,
        "shipping_region": None,
        "shipping_city": row["billing_city"] if shipped else None,
        "discount_code": "SAVE10" if row["discounts"] < 0 else None,
        "order_cancelled": k % 13 == 0,
    }


def rate_rows() -> list[dict[str, Any]]:
    """Daily EUR and JPY rates per USD, with weekends missing (the latest earlier rate
    applies then)."""
    out = []
    day = date(2023, 1, 2)
    k = 0
    while day <= date(2024, 12, 31):
        if day.weekday() < 5:
            k += 1
            eur = Decimal("0.9") + Decimal(k % 37) / Decimal(1000) + Decimal("0.0000012345")
            jpy = Decimal("140") + Decimal(k % 53) / Decimal(7)
            out.append(
                {
                    "date": day,
                    "base": "USD",
                    "currency": "EUR",
                    "rate": eur.quantize(Decimal("1e-10")),
                }
            )
            out.append(
                {
                    "date": day,
                    "base": "USD",
                    "currency": "JPY",
                    "rate": jpy.quantize(Decimal("1e-10")),
                }
            )
        day += timedelta(days=1)
    return out


def order_rows() -> list[dict[str, Any]]:
    rng = random.Random(11)
    out = []
    for k in range(60):
        store = list(STORES)[k % 3]
        at = datetime(2024, 3, 1, tzinfo=UTC) + timedelta(hours=rng.randrange(24 * 44))
        out.append(
            {
                "id": f"ord{k}",
                "store_id": store,
                "platform_id": str(k),
                "order_name": f"#{k}",
                "created_at": at,
                "updated_at": at,
                "processed_at": at,
                "cancelled_at": None,
                "currency": STORES[store].currency,
                "financial_status": rng.choice(["paid", "refunded", "partially_refunded"]),
                "fulfillment_status": "fulfilled",
                "customer_id": f"c{k % 7}",
                "customer_name": f"Customer {k % 7}",
                "email": None,
                "sales_channel": "Online Store",
                "billing_country": rng.choice(["US", "DE"]),
                "billing_region": None,
                "billing_city": None,
                "tags": None,
                "subtotal_price": _money(rng, STORES[store].currency, 10, 90),
                "total_discounts": Decimal(0),
                "total_shipping": Decimal(0),
                "total_tax": Decimal(0),
                "total_duties": Decimal(0),
                "total_additional_fees": Decimal(0),
                "total_price": _money(rng, STORES[store].currency, 10, 99),
                "total_refunded": Decimal(0),
                "line_item_count": rng.randint(1, 3),
                "item_quantity": rng.randint(1, 6),
            }
        )
    return out


def customer_rows() -> list[dict[str, Any]]:
    """The customer records of every store: c0..c6 have orders (order_rows), c7 and c8
    never ordered. Lifetime figures (orders_count, total_spent) are the platform's own,
    independent of the orders synced, as Shopify's are."""
    rng = random.Random(13)
    out = []
    for store in [*STORES, "st_hidden"]:
        currency = STORES[store].currency if store in STORES else HIDDEN.currency
        for k in range(9):
            at = datetime(2023, 6, 1, tzinfo=UTC) + timedelta(hours=rng.randrange(24 * 300))
            out.append(
                {
                    "id": f"c{k}",
                    "store_id": store,
                    "platform_id": str(k),
                    "first_name": f"First{k}",
                    "last_name": f"Last{k}",
                    "customer_name": f"Customer {k}",
                    "email": f"c{k}@example.com" if k % 4 else None,
                    "country": rng.choice(["US", "DE", "JP", None]),
                    "city": rng.choice(["Springfield", "Berlin", None]),
                    "state": rng.choice(["enabled", "disabled", "invited"]),
                    "accepts_marketing": k % 2 == 0,
                    "tags": None,
                    "created_at": at,
                    "updated_at": at,
                    "currency": currency,
                    "orders_count": rng.randint(1, 9),
                    "total_spent": _money(rng, currency, 20, 900),
                }
            )
    return out


def connect(sales: list[dict[str, Any]] | None = None) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with sales, orders and exchange_rates as tables."""
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    for name, schema, rows in (
        ("sales", SALES.schema, sales if sales is not None else sales_rows()),
        ("orders", ORDERS.schema, order_rows()),
        ("customers", CUSTOMERS.schema, customer_rows()),
        ("exchange_rates", EXCHANGE_RATES.schema, rate_rows()),
    ):
        table = pa.Table.from_pylist(rows, schema=schema)
        con.register("incoming", table)
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM incoming")
        con.unregister("incoming")
    return con


# ---- the oracle ----


def local(y: int, m: int, d: int, zone: ZoneInfo = NY, h: int = 0) -> datetime:
    """A local wall-clock time as a UTC instant (independent of warehouse.query.dates)."""
    return datetime(y, m, d, h, tzinfo=zone).astimezone(UTC)


class Rates:
    def __init__(self) -> None:
        self.by_currency: dict[str, list[tuple[date, Decimal]]] = {}
        for r in rate_rows():
            self.by_currency.setdefault(r["currency"], []).append((r["date"], r["rate"]))

    def rate(self, currency: str, day: date) -> Decimal:
        if currency == "USD":
            return Decimal(1)
        return [rate for d, rate in self.by_currency[currency] if d <= day][-1]

    def convert(self, amount: Decimal, currency: str, target: str, day: date) -> Decimal:
        if currency == target:
            return amount
        return amount * self.rate(target, day) / self.rate(currency, day)


RATES = Rates()


def frame(rows: list[dict[str, Any]] | None = None) -> pd.DataFrame:
    df = pd.DataFrame(rows if rows is not None else sales_rows())
    df = df.astype(object).where(pd.notna(df), None)  # None, never NaN, for missing values
    df["store"] = df["store_id"].map({k: v.name for k, v in STORES.items()})
    return df


def bucket_of(at: datetime, granularity: str, zone: ZoneInfo, week_start: int = 0) -> Any:
    lt = at.astimezone(zone)
    day = lt.date()
    if granularity == "day":
        return day.isoformat()
    if granularity == "week":
        return (day - timedelta(days=(day.weekday() - week_start) % 7)).isoformat()
    if granularity == "month":
        return day.replace(day=1).isoformat()
    if granularity == "quarter":
        return date(day.year, 3 * ((day.month - 1) // 3) + 1, 1).isoformat()
    if granularity == "year":
        return date(day.year, 1, 1).isoformat()
    if granularity == "hour":
        return lt.replace(minute=0, second=0, microsecond=0).isoformat()
    if granularity == "hour_of_day":
        return lt.hour
    if granularity == "day_of_week":
        return lt.isoweekday()  # ISO 8601: 1 = Monday, as Shopify numbers weekdays
    if granularity == "month_of_year":
        return lt.month
    raise AssertionError(granularity)


def _round(value: Decimal | None, kind: str, currency: str) -> Any:
    if value is None:
        return None
    if kind == "money":
        return value.quantize(Decimal(1).scaleb(-MINOR[currency]), rounding=ROUND_HALF_UP)
    if value == value.to_integral_value():
        return int(value)
    return value.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)


MONEY = {
    "gross_sales",
    "discounts",
    "returns",
    "net_sales",
    "shipping_charges",
    "duties",
    "additional_fees",
    "taxes",
    "total_sales",
    "total_price",
    "subtotal_price",
    "cost_of_goods_sold",
}


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and value != value)


def aggregate(
    rows: pd.DataFrame, metrics: Iterable[tuple[str, str, str]], currency: str
) -> dict[str, Any]:
    """metrics: (output name, func, field). Money is converted row by row at the rate of
    the event's date in its store's zone, summed exactly, rounded once."""
    out: dict[str, Any] = {}
    records = rows.to_dict("records")
    for name, func, field in metrics:
        if func == "orders":
            value: Decimal | None = Decimal(
                len({r["order_id"] for r in records if r["event_type"] == "order"})
            )
            out[name] = _round(value, "number", currency)
            continue
        if func == "count_distinct":
            out[name] = len({r[field] for r in records if not _missing(r[field])})
            continue
        if func == "count":
            out[name] = sum(1 for r in records if not _missing(r[field]))
            continue
        values = []
        for r in records:
            v = r[field]
            if _missing(v):
                continue
            if field in MONEY:
                at = r.get("happened_at", r.get("created_at"))
                day = at.astimezone(_zone(r["store_id"])).date()
                v = RATES.convert(Decimal(v), r["currency"], currency, day)
            values.append(Decimal(v))
        kind = "money" if field in MONEY else "number"
        if func == "sum":
            value = sum(values, Decimal(0))
        elif func == "avg":
            value = sum(values, Decimal(0)) / len(values) if values else None
        elif func == "median":
            value = statistics.median(values) if values else None
        elif func == "min":
            value = min(values) if values else None
        else:
            value = max(values) if values else None
        out[name] = _round(value, kind, currency)
    return out


def expected(
    df: pd.DataFrame,
    *,
    gte: datetime,
    lt: datetime,
    metrics: list[tuple[str, str, str]],
    group: list[str] = (),  # type: ignore[assignment]
    time: str | None = None,
    zone: ZoneInfo = NY,
    currency: str = "USD",
    where: Callable[[pd.Series], bool] | None = None,
    stores: Iterable[str] = tuple(STORES),
    time_field: str = "happened_at",
    week_start: int = 0,
) -> list[dict[str, Any]]:
    """Rows the query should return (unordered): one per group seen in the window."""
    sel = df[df["store_id"].isin(list(stores))]
    sel = sel[(sel[time_field] >= gte) & (sel[time_field] < lt)]
    if where is not None:
        sel = sel[sel.apply(where, axis=1)] if len(sel) else sel
    sel = sel.copy()
    keys = list(group)
    if time:
        sel["__bucket"] = [bucket_of(t, time, zone, week_start) for t in sel[time_field]]
        keys = ["__bucket", *keys]
    if not keys:
        return [aggregate(sel, metrics, currency)]
    out = []
    for values, part in sel.groupby(keys, dropna=False, sort=False):
        values = values if isinstance(values, tuple) else (values,)
        row = {}
        for k, v in zip(keys, values, strict=True):
            row[time if k == "__bucket" else k] = None if pd.isna(v) else v
        row.update(aggregate(part, metrics, currency))
        out.append(row)
    return out


def at_midnight(day: date, zone: ZoneInfo = NY) -> datetime:
    return datetime.combine(day, time(), zone).astimezone(UTC)


def run_public(con: duckdb.DuckDBPyConnection, text: str, **options: Any) -> dict[str, Any]:
    """`text` answered over the test stores as the API writes it (the Query result)."""
    return run_query(
        con,
        text,
        stores=STORES,
        account_currency=ACCOUNT_CURRENCY,
        account_timezone=ACCOUNT_ZONE,
        now=NOW,
        **options,
    ).public()
