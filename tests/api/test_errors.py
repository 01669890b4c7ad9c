"""Every non-2xx response is application/problem+json with type, title, status and
detail, FastAPI's and Starlette's own errors included."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from fastapi import Body
from pydantic import BaseModel

from quarry.errors import (
    ConfigurationError,
    Conflict,
    NotFound,
    QuarryError,
    UnprocessableExport,
)
from tests.api.conftest import Client, assert_problem, field_errors
from tests.api.world import World


class _Payload(BaseModel):
    query: str
    limit: int


@pytest.fixture
def probe(make_client: Any) -> Client:
    """An app with extra routes that fail in each way a future router might."""
    client: Client = make_client()
    app = client.app

    def typed(page: int, flag: bool = False) -> dict[str, Any]:
        return {"page": page, "flag": flag}

    def body(payload: _Payload = Body(...)) -> dict[str, Any]:
        return payload.model_dump()

    def boom() -> None:
        raise RuntimeError("secret internals at /srv/quarry")

    def raises(kind: str) -> None:
        errors: dict[str, QuarryError] = {
            "conflict": Conflict("the job has produced no file yet"),
            "unprocessable": UnprocessableExport("type 'shipments' cannot run via the API"),
            "configuration": ConfigurationError("cannot reach postgresql://u:pw@db/x"),
            "missing": NotFound("no such export"),
        }
        raise errors[kind]

    app.add_api_route("/v1/_probe/typed", typed)
    app.add_api_route("/v1/_probe/body", body, methods=["POST"])
    app.add_api_route("/v1/_probe/boom", boom)
    app.add_api_route("/v1/_probe/raises/{kind}", raises)
    return client


def test_unknown_path_is_a_404_problem(client: Client, world: World) -> None:
    for key in (None, world.keys["a_all"]):
        body = assert_problem(client.get("/v1/nothing-here", key=key), 404, "Not found")
        assert body["instance"] == "/v1/nothing-here"
    assert_problem(client.get("/nowhere"), 404, "Not found")


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("POST", "/v1/orders", "GET"),
        ("DELETE", "/v1/orders/ord_st_a1_01", "GET"),
        ("PUT", "/v1/account", "GET"),
        ("POST", "/healthz", "GET"),
    ],
)
def test_wrong_method_is_405_with_allow(
    client: Client, world: World, method: str, path: str, allow: str
) -> None:
    response = client.request(method, path, key=world.keys["a_all"])
    assert_problem(response, 405, "Method not allowed")
    assert response.headers["Allow"] == allow


def test_fastapi_validation_becomes_400_invalid_request(probe: Client, world: World) -> None:
    response = probe.get("/v1/_probe/typed", params={"page": "x", "flag": "maybe"})
    body = assert_problem(response, 400, "Invalid request")
    assert sorted(field_errors(body)) == ["flag", "page"]
    assert all(e["message"] for e in body["errors"])
    response = probe.get("/v1/_probe/typed")
    assert field_errors(assert_problem(response, 400, "Invalid request")) == ["page"]


def test_malformed_bodies_are_400_naming_the_field(probe: Client) -> None:
    response = probe.request("POST", "/v1/_probe/body", json={"query": "x", "limit": "many"})
    assert field_errors(assert_problem(response, 400, "Invalid request")) == ["limit"]
    response = probe.request(
        "POST",
        "/v1/_probe/body",
        content=b"{not json",
        headers={"content-type": "application/json"},
    )
    body = assert_problem(response, 400, "Invalid request")
    assert body["errors"] and all(e["field"].startswith("body") for e in body["errors"])


def test_unexpected_errors_are_500_without_traceback(
    probe: Client, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR):
        response = probe.get("/v1/_probe/boom")
    body = assert_problem(response, 500, "Internal error")
    assert "Traceback" not in response.text and "/srv/quarry" not in response.text
    assert "RuntimeError" not in response.text
    assert response.headers["cache-control"] == "no-store"
    assert any(r.exc_info for r in caplog.records), "the error is logged with its traceback"
    assert body["type"].startswith("urn:quarry:problem:")


@pytest.mark.parametrize(
    ("kind", "status", "title"),
    [
        ("conflict", 409, "Conflict"),
        ("unprocessable", 422, "Unprocessable export"),
        ("configuration", 500, "Configuration error"),
        ("missing", 404, "Not found"),
    ],
)
def test_every_quarry_error_renders_as_a_problem(
    probe: Client, kind: str, status: int, title: str
) -> None:
    response = probe.get(f"/v1/_probe/raises/{kind}")
    body = assert_problem(response, status, title)
    assert "pw@" not in response.text  # a server error's own message stays in the log
    assert body["type"] == "urn:quarry:problem:" + title.lower().replace(" ", "-")


def test_openapi_documents_problems(client: Client) -> None:
    schema = client.get("/openapi.json").json()
    assert "Problem" in schema["components"]["schemas"]
    assert "HTTPValidationError" not in schema["components"]["schemas"]
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            for status, response in operation["responses"].items():
                # Shopify's shape outside /v1 (docs/api.md) answers as Shopify does.
                if int(status) >= 400 and not path.startswith("/admin/"):
                    assert list(response["content"]) == ["application/problem+json"], (
                        path,
                        method,
                        status,
                    )
            if path == "/v1/downloads/{token}":
                # The one keyless path: the signed link is the authority (docs/api.md).
                assert "security" not in operation
                assert {"404", "410"} <= set(operation["responses"])
                continue
            if path.startswith("/v1"):
                assert {"400", "401", "429"} <= set(operation["responses"]), path
                assert operation["security"] == [{"HTTPBearer": []}]
                assert "Retry-After" in operation["responses"]["429"]["headers"]
            if path.startswith("/v1") and path != "/v1/account":
                assert "403" in operation["responses"], path
