"""A demo account seeded once per session for the read-only tests; tests that change data
seed their own in `quarry_env`."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import pyarrow as pa
import pytest

from platforms.demo.seed import DemoStore, demo_stores, seed_demo
from platforms.demo.storage import STORE_TABLES, load_table
from quarry.settings import Settings, load_settings
from registry.db import Registry

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
