"""A small, exactly known warehouse for the API tests: three accounts, five stores, keys of
every shape, and hand-made records (hostile text included) written through the real
StoreWriter and recorded as snapshots, as a sync would."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pyarrow as pa

from platforms.demo.hostile import HOSTILE_VALUES, LONG_VALUES
from quarry.settings import Settings
from registry.accounts import create_account, create_store, get_store
from registry.db import Registry
from registry.keys import create_key, revoke_key
from warehouse.lake import Lake
from warehouse.pages import ChangePage
from warehouse.schemas import TABLES
from warehouse.snapshots import record_snapshot
from warehouse.writer import StoreWriter

HOSTILE_TEXTS: tuple[str, ...] = tuple(v.text for v in HOSTILE_VALUES + LONG_VALUES)
T0 = datetime(2024, 1, 1, 10, 0, tzinfo=UTC)
LAST_SYNC = datetime(2024, 4, 1, 9, 30, 15, 250000, tzinfo=UTC)


def ts(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


@dataclass
class World:
    settings: Settings
    registry: Registry
    lake: Lake
    accounts: dict[str, str] = field(default_factory=dict)
    keys: dict[str, str] = field(default_factory=dict)
    key_ids: dict[str, str] = field(default_factory=dict)
    # store id -> dataset -> rows as written (dicts in the table's schema)
    rows: dict[str, dict[str, list[dict[str, Any]]]] = field(default_factory=dict)

    def records(self, dataset: str, *stores: str) -> list[dict[str, Any]]:
        """Rows of `dataset` in `stores`, in API order (created_at, then id)."""
        found = [r for s in stores for r in self.rows.get(s, {}).get(dataset, [])]
        return sorted(found, key=lambda r: (r["created_at"], r["id"]))


def _order(store: str, n: int, created: datetime, **values: Any) -> dict[str, Any]:
    row = {
        "id": f"ord_{store}_{n:02d}",
        "store_id": store,
        "platform_id": str(1000 + n),
        "order_name": f"#{1000 + n}",
        "created_at": created,
        "updated_at": created + timedelta(hours=1),
        "processed_at": created,
        "currency": "USD",
        "financial_status": "paid",
        "fulfillment_status": "fulfilled",
        "customer_name": f"Customer {n}",
        "email": f"c{n}@example.com",
        "subtotal_price": Decimal("10.00"),
        "total_price": Decimal("12.30"),
        "total_tax": Decimal("2.30"),
        "line_item_count": 1,
        "item_quantity": 2,
    }
    row.update(values)
    return row


def _orders(store: str, currency: str) -> list[dict[str, Any]]:
    if store == "st_a1":
        return [
            _order(store, 1, T0),
            _order(store, 2, T0, financial_status="partially_refunded", total_price=Decimal("100")),
            _order(store, 3, ts("2024-01-02T00:00:00Z"), financial_status="refunded"),
            _order(store, 4, ts("2024-01-15T12:30:45.123456Z"), total_price=Decimal("99999999.99")),
            _order(store, 5, ts("2024-02-01T00:00:00Z"), fulfillment_status=None, tags="vip,b2b"),
            _order(store, 6, ts("2024-02-29T23:59:59Z"), customer_name=None, line_item_count=3),
            _order(store, 7, ts("2024-03-10T08:00:00+02:00"), financial_status="pending"),
        ]
    if store == "st_a3":  # the hostile store: one order per hostile value
        return [
            _order(
                store,
                n,
                T0 + timedelta(minutes=n),
                currency=currency,
                customer_name=text,
                tags=text,
            )
            for n, text in enumerate(HOSTILE_TEXTS)
        ]
    count = {"st_a2": 3, "st_b1": 4, "st_c1": 1}[store]
    return [
        _order(store, n, T0 + timedelta(days=n), currency=currency) for n in range(1, count + 1)
    ]


def _customers(store: str, currency: str) -> list[dict[str, Any]]:
    return [
        {
            "id": f"cus_{store}_{n}",
            "store_id": store,
            "platform_id": str(n),
            "first_name": "Ada" if n == 1 else "Grace",
            "last_name": "Lovelace" if n == 1 else "Hopper",
            "customer_name": "Ada Lovelace" if n == 1 else "Grace Hopper",
            "email": None if n == 2 else f"c{n}@example.com",
            "state": "enabled",
            "accepts_marketing": n == 1,
            "created_at": T0 + timedelta(days=n),
            "updated_at": T0 + timedelta(days=n),
            "currency": currency,
            "orders_count": n * 2,
            "total_spent": Decimal("1234.50") * n,
        }
        for n in (1, 2)
    ]


def _products(store: str, currency: str) -> list[dict[str, Any]]:
    return [
        {
            "id": f"prd_{store}_{n}",
            "store_id": store,
            "title": f"Product {n}",
            "status": "active",
            "created_at": T0 + timedelta(hours=n),
            "currency": currency,
            "variant_count": n,
            "min_price": Decimal("0.99"),
            "max_price": Decimal("19.90"),
            "total_inventory": 100 * n,
        }
        for n in (1, 2)
    ]


def _draft_orders(store: str, currency: str) -> list[dict[str, Any]]:
    return [
        {
            "id": f"dft_{store}_1",
            "store_id": store,
            "draft_order_name": "#D1",
            "status": "open",
            "created_at": T0,
            "currency": currency,
            "total_price": Decimal("5.00"),
            "line_item_count": 1,
        }
    ]


_BUILDERS = {
    "orders": _orders,
    "customers": _customers,
    "products": _products,
    "draft_orders": _draft_orders,
}


def _write_store(world: World, store: str, currency: str) -> None:
    writer = StoreWriter(world.lake, store)
    world.rows[store] = {}
    for dataset, build in _BUILDERS.items():
        rows = build(store, currency)
        table = pa.Table.from_pylist(rows, schema=TABLES[dataset].schema)
        writer.apply(ChangePage({dataset: table}), full=True, first=True)
        world.rows[store][dataset] = table.to_pylist()
    record_snapshot(world.registry, store, world.lake.version())


def build_world(settings: Settings) -> World:
    """Accounts a (API plan, stores st_a1..st_a3, st_a3 hostile), b (st_b1), c (no API
    plan, st_c1), keys named by who and what they may do, and every store's records."""
    registry = Registry(settings)
    world = World(settings, registry, Lake(settings))
    with registry.session() as session:
        for name, currency, zone, enabled in (
            ("a", "USD", "America/New_York", True),
            ("b", "GBP", "Europe/London", True),
            ("c", "EUR", "Europe/Paris", False),
        ):
            account = create_account(
                session,
                name=f"Account {name.upper()}",
                currency=currency,
                timezone=zone,
                api_enabled=enabled,
            )
            world.accounts[name] = account.id
        stores = {
            "st_a1": ("a", "USD", "Main Street"),
            "st_a2": ("a", "EUR", "Europa"),
            "st_a3": ("a", "JPY", "Hostile 東京"),
            "st_b1": ("b", "GBP", "Bravo"),
            "st_c1": ("c", "EUR", "Charlie"),
        }
        for store_id, (owner, currency, name) in stores.items():
            create_store(
                session,
                account_id=world.accounts[owner],
                name=name,
                domain=f"{store_id}.example.com",
                currency=currency,
                timezone="UTC",
                platform="demo",
                store_id=store_id,
            )
        keys: dict[str, tuple[str, list[str], list[str] | None]] = {
            "a_all": ("a", ["read_data", "exports"], None),
            "a_read": ("a", ["read_data"], None),
            "a_one": ("a", ["read_data"], ["st_a1"]),
            "a_two": ("a", ["read_data"], ["st_a1", "st_a2"]),
            "a_exports": ("a", ["exports"], None),
            "a_revoked": ("a", ["read_data"], None),
            "b_all": ("b", ["read_data", "exports"], None),
            "c_all": ("c", ["read_data", "exports"], None),
            "c_exports": ("c", ["exports"], None),
        }
        for key_name, (owner, scopes, store_ids) in keys.items():
            issued = create_key(
                session, account_id=world.accounts[owner], scopes=scopes, store_ids=store_ids
            )
            world.keys[key_name] = issued.secret
            world.key_ids[key_name] = issued.row.id
        revoke_key(session, world.key_ids["a_revoked"])
        get_store(session, "st_a1").last_synced_at = LAST_SYNC
    for store_id, (_, currency, _) in stores.items():
        _write_store(world, store_id, currency)
    return world
