"""Fixtures every test may use: an isolated QUARRY_HOME and a throwaway PostgreSQL database.

Services are real. When one is missing the test fails, it is never skipped: `make test`
(scripts/services.sh) installs and starts them.
"""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography.fernet import Fernet
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from quarry.settings import Settings, load_settings
from warehouse.lake import Lake

POSTGRES_ADMIN_URL = os.environ.get(
    "QUARRY_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)
TEST_SECRET_KEY = Fernet.generate_key().decode()


@pytest.fixture(autouse=True)
def _process_logging() -> Iterator[None]:
    """The root logger as each test found it: a command run in the test process (click's
    runner) or an app built from the environment sets up the process's logging, as it
    should in a process of its own, and must not leave its handler behind for the next
    test's servers to write into."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for handler in [h for h in root.handlers if h not in handlers]:
        root.removeHandler(handler)
    root.setLevel(level)


def require_service(name: str, error: Exception) -> None:
    """A missing service fails the test with a line that says how to start it."""
    pytest.fail(f"{name} is not reachable ({error}); run `make services`", pytrace=False)


@pytest.fixture
def quarry_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    """Settings over a fresh QUARRY_HOME, with the environment set to match, so code that
    reads the environment itself (commands, Dagster resources) sees the same home."""
    home = tmp_path / "quarry-home"
    for name in list(os.environ):
        if name.startswith("QUARRY_") or name == "DAGSTER_HOME":
            monkeypatch.delenv(name)
    monkeypatch.setenv("QUARRY_HOME", str(home))
    monkeypatch.setenv("QUARRY_SECRET_KEY", TEST_SECRET_KEY)
    monkeypatch.setenv("QUARRY_RATE_LIMIT", "off")
    return load_settings()


def _create_database() -> tuple[str, str]:
    admin = create_engine(POSTGRES_ADMIN_URL, isolation_level="AUTOCOMMIT")
    name = f"quarry_test_{uuid.uuid4().hex[:12]}"
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
    except Exception as exc:  # any driver error means the server is not usable
        require_service("PostgreSQL at 127.0.0.1:5432", exc)
    finally:
        admin.dispose()
    url = make_url(POSTGRES_ADMIN_URL).set(database=name).render_as_string(hide_password=False)
    return name, url


def _drop_database(name: str) -> None:
    admin = create_engine(POSTGRES_ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A new, empty PostgreSQL database for one test, dropped afterwards."""
    name, url = _create_database()
    try:
        yield url
    finally:
        _drop_database(name)


@pytest.fixture
def lake(quarry_env: Settings) -> Iterator[Lake]:
    """The warehouse of the test's home (SQLite catalog, data in a folder), attached."""
    handle = Lake(quarry_env)
    yield handle
    handle.close()
