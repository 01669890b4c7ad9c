"""The API under test: one warehouse (tests/api/world.py) and one app per test session,
called in-process through httpx's ASGITransport from plain (synchronous) tests."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from fastapi import FastAPI

from api.main import create_app
from quarry.settings import Settings, load_settings
from tests.api.world import World, build_world
from tests.conftest import TEST_SECRET_KEY


@contextmanager
def isolated_env(home: str, **extra: str) -> Iterator[pytest.MonkeyPatch]:
    """The environment of a fresh QUARRY_HOME (like the quarry_env fixture), for fixtures
    wider than one test."""
    with pytest.MonkeyPatch.context() as patch:
        for name in list(os.environ):
            if name.startswith("QUARRY_") or name == "DAGSTER_HOME":
                patch.delenv(name)
        patch.setenv("QUARRY_HOME", home)
        patch.setenv("QUARRY_SECRET_KEY", TEST_SECRET_KEY)
        patch.setenv("QUARRY_RATE_LIMIT", "off")
        # Nothing listens here: readiness must report Dagster unreachable, quickly.
        patch.setenv("QUARRY_DAGSTER_URL", "http://127.0.0.1:9")
        for name, value in extra.items():
            patch.setenv(name, value)
        yield patch


class Client:
    """A synchronous face on httpx.AsyncClient(ASGITransport(app)): one event loop in a
    portal thread for the session, so tests read like plain requests."""

    def __init__(self, app: FastAPI, portal: BlockingPortal) -> None:
        self.app = app
        self._portal = portal
        self._client = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://quarry.test"
        )

    def request(
        self, method: str, path: str, *, key: str | None = None, **kwargs: Any
    ) -> httpx.Response:
        # httpx.Headers keeps a header given twice (a list of pairs), as hostile tests need.
        headers = httpx.Headers(kwargs.pop("headers", None) or {})
        if key is not None:
            headers["Authorization"] = f"Bearer {key}"
        return self._portal.call(
            lambda: self._client.request(method, path, headers=headers, **kwargs)
        )

    def get(self, path: str, *, key: str | None = None, **kwargs: Any) -> httpx.Response:
        return self.request("GET", path, key=key, **kwargs)

    def close(self) -> None:
        self._portal.call(self._client.aclose)


@pytest.fixture(scope="session")
def portal() -> Iterator[BlockingPortal]:
    with start_blocking_portal() as running:
        yield running


@pytest.fixture(scope="session")
def api_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """Settings of the session's QUARRY_HOME. The environment is restored at once: every
    app here is built from this object, so other tests in the worker see theirs."""
    home = tmp_path_factory.mktemp("api") / "quarry-home"
    with isolated_env(str(home)):
        return load_settings()


@pytest.fixture(scope="session")
def world(api_settings: Settings) -> Iterator[World]:
    built = build_world(api_settings)
    yield built
    built.lake.close()
    built.registry.dispose()


@pytest.fixture(scope="session")
def app(world: World, api_settings: Settings) -> Iterator[FastAPI]:
    application = create_app(api_settings)
    yield application
    application.state.reader.close()
    application.state.registry.dispose()


@pytest.fixture(scope="session")
def client(app: FastAPI, portal: BlockingPortal) -> Iterator[Client]:
    made = Client(app, portal)
    yield made
    made.close()


@pytest.fixture
def make_client(portal: BlockingPortal, world: World) -> Iterator[Any]:
    """Builds a client on a fresh app with other settings (rate limit, Redis) over the
    session's warehouse."""
    made: list[Client] = []

    def build(**overrides: Any) -> Client:
        app = create_app(world.settings.model_copy(update=overrides))
        made.append(Client(app, portal))
        return made[-1]

    yield build
    for one in made:
        one.close()
        one.app.state.reader.close()
        one.app.state.registry.dispose()
        if one.app.state.limiter is not None:
            one.app.state.limiter.close()


def assert_problem(response: httpx.Response, status: int, title: str) -> dict[str, Any]:
    """The response is a problem+json of `status` and `title`; returns its body."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body = response.json()
    assert body["status"] == status
    assert body["title"] == title
    assert isinstance(body["type"], str) and body["type"]
    assert isinstance(body["detail"], str) and body["detail"]
    return body


def field_errors(body: dict[str, Any]) -> list[str]:
    return [e["field"] for e in body.get("errors", [])]
