"""seed_demo: registry rows and files together, or neither."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path

import pytest
from sqlalchemy.exc import OperationalError

from cli.demo_account import seed_demo
from platforms.demo.seed import demo_stores
from platforms.demo.storage import STORE_TABLES, demo_accounts, load_state
from quarry.errors import InvalidRequest
from quarry.files import demo_files
from quarry.settings import Settings
from registry.accounts import get_account, list_accounts, list_stores
from registry.db import Registry
from tests.platforms.demo.conftest import settings_in


def test_seed_registers_the_account_and_its_stores(quarry_env: Settings) -> None:
    registry = Registry(quarry_env)
    account_id = seed_demo(
        quarry_env, registry, orders=1_200, stores=4, seed=3, anchor=date(2025, 3, 1)
    )
    with registry.session() as session:
        account = get_account(session, account_id)
        assert (account.name, account.currency, account.timezone) == (
            "Demo Account",
            "USD",
            "America/New_York",
        )
        stores = {s.id: s for s in list_stores(session, account_id)}
    shown = demo_stores(quarry_env, account_id)
    assert set(stores) == {s.id for s in shown}
    assert [s.currency for s in shown] == ["USD", "EUR", "JPY", "GBP"]
    assert [s.timezone for s in shown] == [
        "America/New_York",
        "Europe/Berlin",
        "Asia/Tokyo",
        "Europe/London",
    ]
    for store in shown:
        row = stores[store.id]
        assert row.platform == "demo" and row.name == store.name
        assert row.domain.endswith(".demo-platform.test")
        for table in STORE_TABLES:
            key = f"{account_id}/{store.id}/{table}.parquet"
            assert demo_files(quarry_env).size(key), key
    state = load_state(quarry_env, account_id)
    assert (state.seed, state.anchor, state.advances) == (3, date(2025, 3, 1), 0)
    assert state.clock == int(datetime(2025, 3, 1, tzinfo=UTC).timestamp())
    assert demo_accounts(quarry_env) == [account_id]


def test_the_anchor_defaults_to_today(quarry_env: Settings) -> None:
    account_id = seed_demo(quarry_env, Registry(quarry_env), orders=300, stores=1)
    assert load_state(quarry_env, account_id).anchor == datetime.now(UTC).date()


@pytest.mark.parametrize(("orders", "stores"), [(2, 3), (100, 0), (100, 51)])
def test_bad_sizes_are_refused_before_anything_is_written(
    quarry_env: Settings, orders: int, stores: int
) -> None:
    registry = Registry(quarry_env)
    with pytest.raises(InvalidRequest):
        seed_demo(quarry_env, registry, orders=orders, stores=stores)
    with registry.session() as session:
        assert list_accounts(session) == []
    assert demo_accounts(quarry_env) == []


def test_a_failed_write_leaves_no_account(quarry_env: Settings) -> None:
    registry = Registry(quarry_env)
    quarry_env.demo_dir.parent.mkdir(parents=True, exist_ok=True)
    quarry_env.demo_dir.write_text("in the way")
    with pytest.raises(OSError):
        seed_demo(quarry_env, registry, orders=300, stores=2)
    with registry.session() as session:
        assert list_accounts(session) == []


def test_a_failed_registry_leaves_no_files(tmp_path: Path) -> None:
    settings = settings_in(tmp_path / "home")
    unmigrated = Registry(settings, run_migrations=False)
    with pytest.raises(OperationalError):
        seed_demo(settings, unmigrated, orders=300, stores=2)
    assert list(settings.demo_dir.iterdir()) == []
