"""A demo account seeded once per session for the read-only tests; tests that change data
seed their own in `quarry_env`."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import pyarrow as pa
import pytest

from cli.demo_account import seed_demo
from platforms.demo.seed import DemoStore, demo_stores
from platforms.demo.storage import STORE_TABLES, load_table
from quarry.settings import Settings, load_settings
from registry.db import Registry
from tests.destinations.servers import use_servers

SHM = Path("/dev/shm")
# Covers Black Friday 2024 and 2025 and about a year on either side of them.
ANCHOR = date(2025, 12, 15)
ORDERS = 9_000


@dataclass(frozen=True)
class SeededAccount:
    settings: Settings
    registry: Registry
    account_id: str
    stores: list[DemoStore]

    def tables(self, store_id: str) -> dict[str, pa.Table]:
        return {
            name: load_table(self.settings, self.account_id, store_id, name)
            for name in STORE_TABLES
        }


def settings_in(home: Path) -> Settings:
    return load_settings(home=home, database_url=f"sqlite:///{home / 'registry.db'}")


@pytest.fixture(scope="session")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SeededAccount]:
    settings = settings_in(tmp_path_factory.mktemp("demo-seeded"))
    registry = Registry(settings)
    account_id = seed_demo(settings, registry, orders=ORDERS, stores=3, seed=7, anchor=ANCHOR)
    yield SeededAccount(settings, registry, account_id, demo_stores(settings, account_id))
    registry.dispose()


@pytest.fixture
def dagster_home(quarry_env: Settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """DAGSTER_HOME for the tests that sync, on tmpfs when there is one: Dagster's SQLite
    storage commits every event."""
    fast = SHM.is_dir() and os.access(SHM, os.W_OK)
    home = Path(tempfile.mkdtemp(prefix="quarry-dagster-", dir=SHM if fast else None))
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    try:
        yield home
    finally:
        shutil.rmtree(home, ignore_errors=True)


def pytest_configure(config: pytest.Config) -> None:
    use_servers(config)
