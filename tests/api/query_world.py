"""Accounts with sales and exchange rates for the query endpoint's tests, added to the API
test world (tests/api/world.py) the way a sync adds them: sales pages through StoreWriter,
rates through upsert_rows, then a recorded snapshot. Each test module adds accounts of its
own, so the stores other modules read never change under them."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

import pyarrow as pa

from registry.accounts import create_account, create_store
from registry.keys import create_key
from tests.api.world import World
from warehouse.pages import ChangePage
from warehouse.rollups import build as rollups
from warehouse.schemas import EXCHANGE_RATES, SALES
from warehouse.snapshots import record_snapshot
from warehouse.writer import StoreWriter, upsert_rows


@dataclass(frozen=True)
class StoreSpec:
    name: str
    currency: str
    timezone: str


@dataclass
class QueryAccount:
    account_id: str
    currency: str
    timezone: str
    stores: dict[str, StoreSpec]
    keys: dict[str, str] = field(default_factory=dict)


def add_account(
    world: World,
    name: str,
    currency: str,
    timezone: str,
    stores: dict[str, StoreSpec],
    keys: dict[str, tuple[list[str], list[str] | None]],
) -> QueryAccount:
    """An account on a plan with the API, its stores and keys (name -> (scopes, stores))."""
    with world.registry.session() as session:
        account = create_account(
            session, name=name, currency=currency, timezone=timezone, api_enabled=True
        )
        made = QueryAccount(account.id, currency, timezone, stores)
        for store_id, spec in stores.items():
            create_store(
                session,
                account_id=account.id,
                name=spec.name,
                domain=f"{store_id}.example.com",
                currency=spec.currency,
                timezone=spec.timezone,
                platform="demo",
                store_id=store_id,
            )
        for key_name, (scopes, store_ids) in keys.items():
            issued = create_key(session, account_id=account.id, scopes=scopes, store_ids=store_ids)
            made.keys[key_name] = issued.secret
    return made


def sale(
    account: QueryAccount,
    store_id: str,
    order_id: str,
    at: str,
    total: str,
    **values: Any,
) -> dict[str, Any]:
    """One order line of `total` (store currency) at the UTC instant `at`, with the local
    times a sync precomputes for the store's and the account's zones."""
    spec = account.stores[store_id]
    instant = datetime.fromisoformat(at).astimezone(UTC)
    amount = Decimal(total)
    row: dict[str, Any] = {name: None for name in SALES.schema.names}
    row.update(
        id=f"{order_id}_line",
        store_id=store_id,
        order_id=order_id,
        order_name=f"#{order_id}",
        event_type="order",
        line_type="product",
        happened_at=instant,
        happened_at_store=instant.astimezone(ZoneInfo(spec.timezone)).replace(tzinfo=None),
        happened_at_account=instant.astimezone(ZoneInfo(account.timezone)).replace(tzinfo=None),
        currency=spec.currency,
        customer_id=f"cus_{order_id}",
        product_title="Mug",
        ordered_item_quantity=1,
        returned_item_quantity=0,
        net_items_sold=1,
        gross_sales=amount,
        discounts=Decimal(0),
        returns=Decimal(0),
        net_sales=amount,
        shipping_charges=Decimal(0),
        duties=Decimal(0),
        additional_fees=Decimal(0),
        taxes=Decimal(0),
        total_sales=amount,
    )
    row.update(values)
    return row


def write_rates(world: World, rates: list[tuple[date, str, str]]) -> None:
    """Upserts (day, currency, units per USD) into exchange_rates: stores published after
    this read them (exchange_rates is global)."""
    rows = [{"date": d, "base": "USD", "currency": c, "rate": Decimal(r)} for d, c, r in rates]
    upsert_rows(world.lake, "exchange_rates", pa.Table.from_pylist(rows, EXCHANGE_RATES.schema))


def write_sales(
    world: World,
    store_id: str,
    rows: list[dict[str, Any]] | pa.Table,
    *,
    full: bool = False,
) -> None:
    """A sales page of `rows` (replacing the sales of their orders, or with `full` every
    sale of the store), then the store's new snapshot (with every rate written so far)."""
    table = rows if isinstance(rows, pa.Table) else pa.Table.from_pylist(rows, SALES.schema)
    StoreWriter(world.lake, store_id).apply(ChangePage({"sales": table}), full=full, first=full)
    # The sync's sales step writes the rollups with the rows: so does this page.
    rollups.rebuild(world.lake, [store_id])
    record_snapshot(world.registry, store_id, world.lake.version())
