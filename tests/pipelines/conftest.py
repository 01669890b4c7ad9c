"""A real Dagster instance in a temporary DAGSTER_HOME, a registry and a small demo account;
the destination servers' fixtures (tests/destinations/servers.py: SMTP, webhooks) too.

DAGSTER_HOME goes on tmpfs when the machine has one: Dagster's SQLite storage commits every
event, and a commit costs ~17 ms on this disk against ~0.1 ms in memory. It is the same
storage either way.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from datetime import date
from pathlib import Path

import pytest
from dagster import DagsterInstance

from cli.demo_account import seed_demo
from pipelines.instance import open_instance
from quarry.settings import Settings, load_settings
from registry.accounts import list_stores
from registry.db import Registry
from tests.destinations.servers import use_servers

SHM = Path("/dev/shm")
ANCHOR = date(2024, 6, 1)


def pytest_configure(config: pytest.Config) -> None:
    use_servers(config)


@pytest.fixture
def settings(quarry_env: Settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[Settings]:
    """Settings over quarry_env's home, with DAGSTER_HOME in a fresh (tmpfs) directory."""
    fast = SHM.is_dir() and os.access(SHM, os.W_OK)
    base = Path(tempfile.mkdtemp(prefix="quarry-dagster-", dir=SHM if fast else None))
    monkeypatch.setenv("DAGSTER_HOME", str(base))
    try:
        yield load_settings()
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def registry(settings: Settings) -> Iterator[Registry]:
    reg = Registry(settings)
    yield reg
    reg.dispose()


@pytest.fixture
def instance(settings: Settings) -> Iterator[DagsterInstance]:
    with open_instance(settings) as dagster_instance:
        yield dagster_instance


@pytest.fixture
def demo_account(settings: Settings, registry: Registry) -> str:
    """A demo account of two stores (USD in New York, EUR in Berlin), 2,000 orders."""
    return seed_demo(settings, registry, orders=2_000, stores=2, seed=11, anchor=ANCHOR)


@pytest.fixture
def store_ids(registry: Registry, demo_account: str) -> list[str]:
    with registry.session() as session:
        return [store.id for store in list_stores(session, demo_account)]
