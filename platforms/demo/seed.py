"""Seeding a demo account: generate every store's data, then register the account and its
stores. Either all of it exists afterwards or none of it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime

from cli.demo_samples import create_sample_configs
from platforms.demo.generator import generate_store
from platforms.demo.state import DemoState
from platforms.demo.storage import Folder, load_state, publish, save_state, stage_tables
from platforms.demo.templates import split_orders, store_slug, template_for
from platforms.demo.timeline import day_seconds
from quarry.errors import InvalidRequest
from quarry.files import demo_files
from quarry.settings import Settings
from registry.accounts import create_account, create_store
from registry.db import Registry
from registry.ids import new_id

ACCOUNT_NAME = "Demo Account"
ACCOUNT_CURRENCY = "USD"
ACCOUNT_TIMEZONE = "America/New_York"
DOMAIN_SUFFIX = "demo-platform.test"
MAX_STORES = 50


@dataclass(frozen=True)
class DemoStore:
    id: str
    name: str
    currency: str
    timezone: str


def seed_demo(
    settings: Settings,
    registry: Registry,
    *,
    orders: int = 50_000,
    stores: int = 3,
    seed: int = 42,
    anchor: date | None = None,
) -> str:
    """Create a demo account with `stores` stores holding `orders` orders in all, placed in
    the two years before 00:00 UTC of `anchor` (default: today, UTC). Returns the account id;
    `demo_stores` lists its stores. The same seed and anchor give the same data (store ids
    aside, which the registry draws)."""
    if not 1 <= stores <= MAX_STORES:
        raise InvalidRequest(
            f"stores: must be between 1 and {MAX_STORES}",
            errors=[{"field": "stores", "message": f"between 1 and {MAX_STORES}"}],
        )
    if orders < stores:
        raise InvalidRequest(
            "orders: need at least one order per store",
            errors=[{"field": "orders", "message": "at least one per store"}],
        )
    anchor = anchor or datetime.now(UTC).date()
    store_ids = [new_id("st", 10) for _ in range(stores)]
    files = demo_files(settings)
    # Seeded under a name of its own, moved under the account's id once the registry has
    # given one: an account never points at files half written.
    staging = f".seeding-{new_id('tmp', 8)}"
    final = None
    try:
        states = []
        for index, (store_id, count) in enumerate(
            zip(store_ids, split_orders(orders, stores), strict=True)
        ):
            seeded = generate_store(seed, index, store_id, count, anchor)
            publish(stage_tables(Folder(files, f"{staging}/{store_id}"), seeded.tables))
            states.append(seeded.state)
        with registry.session() as session:
            account = create_account(
                session, name=ACCOUNT_NAME, currency=ACCOUNT_CURRENCY, timezone=ACCOUNT_TIMEZONE
            )
            for state in states:
                create_store(
                    session,
                    store_id=state.id,
                    account_id=account.id,
                    name=state.name,
                    domain=f"{store_slug(state.index)}-{state.id[-6:]}.{DOMAIN_SUFFIX}",
                    currency=template_for(state.index).currency,
                    timezone=template_for(state.index).timezone,
                    platform="demo",
                )
            create_sample_configs(session, settings, account.id)
            final = account.id
            files.move(staging, final)
            save_state(
                settings,
                DemoState(
                    account_id=account.id,
                    seed=seed,
                    anchor=anchor,
                    clock=day_seconds(anchor),
                    advances=0,
                    stores=states,
                ),
            )
            account_id = account.id
    except BaseException:
        files.remove(staging)
        if final is not None:
            files.remove(final)
        raise
    return account_id


def demo_stores(settings: Settings, account_id: str) -> list[DemoStore]:
    """The stores of a demo account, in template order. NotFound without demo data."""
    return [
        DemoStore(s.id, s.name, s.currency, s.timezone)
        for s in load_state(settings, account_id).stores
    ]
