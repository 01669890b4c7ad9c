"""Generating a demo account's data: every store's tables, staged, then committed under the
account id the caller registered (cli.demo_account does that: the platform knows nothing of
Quarry's accounts)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime

from platforms.demo.generator import generate_store
from platforms.demo.state import DemoState, StoreState
from platforms.demo.storage import Folder, load_state, publish, save_state, stage_tables
from platforms.demo.templates import split_orders, store_slug
from platforms.demo.timeline import day_seconds
from quarry.errors import InvalidRequest
from quarry.files import FileStore, demo_files
from quarry.settings import Settings
from registry.ids import new_id

DOMAIN_SUFFIX = "demo-platform.test"
MAX_STORES = 50


@dataclass(frozen=True)
class DemoStore:
    id: str
    name: str
    currency: str
    timezone: str


@dataclass
class GeneratedDemo:
    """A demo account's data, generated and staged under a name of its own until `commit`
    moves it under the account's id: an account never points at files half written."""

    files: FileStore
    staging: str
    seed: int
    anchor: date
    stores: list[StoreState]

    def commit(self, settings: Settings, account_id: str) -> None:
        """Publish the data as account `account_id`'s, the state last."""
        self.files.move(self.staging, account_id)
        try:
            save_state(
                settings,
                DemoState(
                    account_id=account_id,
                    seed=self.seed,
                    anchor=self.anchor,
                    clock=day_seconds(self.anchor),
                    advances=0,
                    stores=self.stores,
                ),
            )
        except BaseException:
            self.files.remove(account_id)
            raise

    def discard(self) -> None:
        self.files.remove(self.staging)


def generate_demo(
    settings: Settings,
    *,
    orders: int = 50_000,
    stores: int = 3,
    seed: int = 42,
    anchor: date | None = None,
) -> GeneratedDemo:
    """Generate `stores` stores holding `orders` orders in all, placed in the two years
    before 00:00 UTC of `anchor` (default: today, UTC). The same seed and anchor give the
    same data (store ids aside, which are drawn). `StoreState.domain` and the templates
    name each store."""
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
    generated = GeneratedDemo(files, f".seeding-{new_id('tmp', 8)}", seed, anchor, [])
    try:
        for index, (store_id, count) in enumerate(
            zip(store_ids, split_orders(orders, stores), strict=True)
        ):
            seeded = generate_store(seed, index, store_id, count, anchor)
            publish(stage_tables(Folder(files, f"{generated.staging}/{store_id}"), seeded.tables))
            generated.stores.append(seeded.state)
    except BaseException:
        generated.discard()
        raise
    return generated


def store_domain(state: StoreState) -> str:
    """The made-up shop domain of a demo store."""
    return f"{store_slug(state.index)}-{state.id[-6:]}.{DOMAIN_SUFFIX}"


def demo_stores(settings: Settings, account_id: str) -> list[DemoStore]:
    """The stores of a demo account, in template order. NotFound without demo data."""
    return [
        DemoStore(s.id, s.name, s.currency, s.timezone)
        for s in load_state(settings, account_id).stores
    ]
