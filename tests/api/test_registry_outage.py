"""A registry outage seen by /v1 (issue 32): the API keeps running while its PostgreSQL
database refuses connections, and answers 503 "Service unavailable" with Retry-After, never
a 401 (a key that cannot be checked is not an unknown key) nor a 500."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from anyio.from_thread import BlockingPortal
from sqlalchemy import create_engine, make_url, text

from api.main import create_app
from quarry.settings import Settings, load_settings
from registry.accounts import create_account
from registry.db import Registry
from registry.keys import create_key
from tests.api.conftest import Client, assert_problem
from tests.conftest import POSTGRES_ADMIN_URL


@contextmanager
def outage(database_url: str) -> Iterator[None]:
    """The registry's database refuses new connections and drops the open ones."""
    name = make_url(database_url).database
    admin = create_engine(POSTGRES_ADMIN_URL, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as connection:
            connection.execute(text(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false'))
            connection.execute(
                text("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = :n"),
                {"n": name},
            )
        yield
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true'))
        admin.dispose()


@pytest.fixture
def settings(quarry_env: Settings, postgres_url: str, monkeypatch: pytest.MonkeyPatch) -> Settings:
    monkeypatch.setenv("QUARRY_DATABASE_URL", postgres_url)
    return load_settings()


@pytest.fixture
def key(settings: Settings) -> str:
    registry = Registry(settings)
    with registry.session() as session:
        account = create_account(session, name="Acme", currency="EUR", timezone="UTC")
        secret = create_key(session, account_id=account.id, scopes=["read_data", "exports"]).secret
    registry.dispose()
    return secret


@pytest.fixture
def client(settings: Settings, key: str, portal: BlockingPortal) -> Iterator[Client]:
    made = Client(create_app(settings), portal)
    yield made
    made.close()
    made.app.state.reader.close()
    made.app.state.registry.dispose()


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/v1/account"),
        ("GET", "/v1/stores"),
        ("GET", "/v1/orders"),
        ("GET", "/v1/exports"),
        ("GET", "/v1/export-jobs/job_unknown"),
        ("POST", "/admin/api/2026-10/graphql.json"),
    ],
)
def test_v1_answers_503_with_retry_after(
    client: Client, settings: Settings, key: str, method: str, path: str
) -> None:
    assert client.request("GET", "/v1/account", key=key).status_code == 200
    with outage(settings.database_url):
        for secret in (key, "qk_" + "0" * 49):  # a live key and an unknown one alike
            response = client.request(method, path, key=secret)
            body = assert_problem(response, 503, "Service unavailable")
            assert int(response.headers["retry-after"]) >= 1
            assert "registry" in body["detail"]
    assert client.request("GET", "/v1/account", key=key).status_code == 200
