"""The registry on both databases it supports: every test here runs on SQLite and on
PostgreSQL (a fresh database per test, from tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine

from quarry.settings import Settings, load_settings
from registry.db import Registry, make_engine


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, quarry_env: Settings, tmp_path: Path) -> str:
    """An empty registry database of each kind."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'registry.db'}"
    return request.getfixturevalue("postgres_url")


@pytest.fixture
def empty_engine(database_url: str) -> Iterator[Engine]:
    """An engine on the empty database, nothing migrated."""
    engine = make_engine(database_url)
    yield engine
    engine.dispose()


@pytest.fixture
def registry(database_url: str) -> Iterator[Registry]:
    """A migrated registry on the database."""
    reg = Registry(load_settings(database_url=database_url))
    yield reg
    reg.dispose()
