"""GET /healthz and GET /readyz: outside /v1, no key, problem+json when not ready."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import pytest

from registry.db import Registry
from tests.api.conftest import Client, assert_problem


def test_healthz_answers_without_a_key(client: Client) -> None:
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_readyz_reports_checks_and_dagster_unreachable(client: Client) -> None:
    response = client.get("/readyz")
    assert response.status_code == 200
    assert response.json() == {
        "status": "ready",
        "checks": {"registry": "ok", "warehouse": "ok"},
        "exports": {"dagster_webserver": "unreachable"},
    }


class _Dagster(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b'{"dagster_webserver_version": "test"}')

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def dagster_url() -> Iterator[str]:
    server = HTTPServer(("127.0.0.1", 0), _Dagster)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_readyz_reports_dagster_reachable(make_client: Any, dagster_url: str) -> None:
    client: Client = make_client(dagster_url=dagster_url)
    body = client.get("/readyz").json()
    assert body["exports"] == {"dagster_webserver": "reachable"}


def test_readyz_is_503_when_the_registry_is_down(make_client: Any) -> None:
    client: Client = make_client()
    settings = client.app.state.settings.model_copy(
        update={"database_url": "postgresql+psycopg://nobody@127.0.0.1:1/none"}
    )
    healthy = client.app.state.registry
    client.app.state.registry = Registry(settings, run_migrations=False)
    try:
        body = assert_problem(client.get("/readyz"), 503, "Service unavailable")
        assert "registry" in body["detail"] and "nobody" not in body["detail"]
        assert client.get("/healthz").status_code == 200
    finally:
        client.app.state.registry.dispose()
        client.app.state.registry = healthy


@pytest.mark.parametrize(
    ("path", "needed"),
    [("/docs", {"swagger-ui-bundle.js", "swagger-ui.css"}), ("/redoc", {"redoc.standalone.js"})],
)
def test_the_docs_pages_need_no_internet(client: Client, path: str, needed: set[str]) -> None:
    page = client.get(path)
    assert page.status_code == 200
    assert "cdn." not in page.text and "https://" not in page.text
    assets = re.findall(r'(?:src|href)="(/docs/assets/[^"]+)"', page.text)
    assert {a.rsplit("/", 1)[1] for a in assets} >= needed
    for asset in assets:
        served = client.get(asset)
        assert served.status_code == 200, asset
        assert len(served.content) > 1000
    assert "openapi.json" in page.text
