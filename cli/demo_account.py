"""The demo account: the demo platform's generated data registered as a Quarry account,
with its stores and the sample export configurations (cli.demo_samples). The demo platform
only makes commerce data; registering it is the demo command's job."""

from __future__ import annotations

from datetime import date

from cli.demo_samples import create_sample_configs
from platforms.demo.advance import AdvanceSummary, advance_stores
from platforms.demo.seed import generate_demo, store_domain
from platforms.demo.templates import template_for
from quarry.settings import Settings
from registry.accounts import create_account, create_store, get_account, list_stores
from registry.db import Registry

ACCOUNT_NAME = "Demo Account"
ACCOUNT_CURRENCY = "USD"
ACCOUNT_TIMEZONE = "America/New_York"


def seed_demo(
    settings: Settings,
    registry: Registry,
    *,
    orders: int = 50_000,
    stores: int = 3,
    seed: int = 42,
    anchor: date | None = None,
) -> str:
    """Create a demo account with `stores` stores holding `orders` orders in all
    (platforms.demo.seed.generate_demo). Returns the account id; either all of it exists
    afterwards or none of it."""
    generated = generate_demo(settings, orders=orders, stores=stores, seed=seed, anchor=anchor)
    committed: str | None = None
    try:
        with registry.session() as session:
            account = create_account(
                session, name=ACCOUNT_NAME, currency=ACCOUNT_CURRENCY, timezone=ACCOUNT_TIMEZONE
            )
            for state in generated.stores:
                template = template_for(state.index)
                create_store(
                    session,
                    store_id=state.id,
                    account_id=account.id,
                    name=state.name,
                    domain=store_domain(state),
                    currency=template.currency,
                    timezone=template.timezone,
                    platform="demo",
                )
            create_sample_configs(session, settings, account.id)
            # Inside the transaction: should publishing fail, the account is not created.
            generated.commit(settings, account.id)
            committed = account.id
    except BaseException:
        generated.discard()
        if committed is not None:
            generated.files.remove(committed)
        raise
    return committed


def advance_demo(
    settings: Settings, registry: Registry, account_id: str, days: int = 1
) -> AdvanceSummary:
    """Advance the demo account's clock by `days` days, with changes in each of its demo
    stores still registered. NotFound for an unknown account or one without demo data."""
    with registry.session() as session:
        get_account(session, account_id)
        registered = {s.id for s in list_stores(session, account_id) if s.platform == "demo"}
    return advance_stores(settings, account_id, registered, days)
