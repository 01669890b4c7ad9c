"""Every CLI test runs against a fresh QUARRY_HOME (SQLite registry inside it) unless it
points QUARRY_DATABASE_URL elsewhere."""

from __future__ import annotations

import pytest

from quarry.settings import Settings


@pytest.fixture(autouse=True)
def home(quarry_env: Settings) -> Settings:
    return quarry_env
