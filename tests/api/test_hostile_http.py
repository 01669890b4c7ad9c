"""HTTP details a hostile or careless client meets (issue 17, items 6 and 8): a trailing
slash is a 404 problem, not a redirect built from the Host header; HEAD answers as GET
without a body; two Authorization headers are a 401, not "the first one wins"."""

from __future__ import annotations

import httpx
import pytest
from anyio.from_thread import BlockingPortal
from fastapi import FastAPI

from tests.api.conftest import Client, assert_problem
from tests.api.world import World


@pytest.mark.parametrize(
    "path", ["/v1/orders/", "/v1/stores/", "/healthz/", "/v1/orders/ord_st_a1_01/"]
)
def test_a_trailing_slash_is_a_404_problem(client: Client, world: World, path: str) -> None:
    response = client.get(path, key=world.keys["a_all"], headers={"Host": "evil.example"})
    body = assert_problem(response, 404, "Not found")
    assert body["detail"] == f"nothing is served at {path}"
    assert "location" not in response.headers


@pytest.mark.parametrize(
    "path", ["/v1/orders?page_size=2", "/v1/orders/ord_st_a1_01", "/v1/account", "/healthz"]
)
def test_head_answers_as_get_without_a_body(client: Client, world: World, path: str) -> None:
    key = world.keys["a_all"]
    got = client.get(path, key=key)
    head = client.request("HEAD", path, key=key)
    assert got.status_code == 200, got.text
    assert head.status_code == 200
    assert head.content == b""
    for name in ("content-type", "content-length", "cache-control"):
        assert head.headers[name] == got.headers[name], name


def test_head_answers_errors_as_get_does(client: Client) -> None:
    response = client.request("HEAD", "/v1/orders")
    assert response.status_code == 401
    assert response.headers["content-type"] == "application/problem+json"
    assert response.headers["www-authenticate"] == "Bearer"
    assert response.content == b""


def test_head_on_an_endpoint_without_get_is_405_naming_head(client: Client) -> None:
    response = client.request("HEAD", "/v1/query")
    assert response.status_code == 405
    assert response.headers["allow"] == "POST"


def test_two_authorization_headers_are_a_401(
    app: FastAPI, portal: BlockingPortal, world: World
) -> None:
    # The conftest client keeps one value per header name; this one sends both.
    headers = [
        ("Authorization", f"Bearer {world.keys['a_all']}"),
        ("Authorization", f"Bearer {world.keys['b_all']}"),
    ]

    async def call() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://quarry.test") as c:
            return await c.get("/v1/account", headers=headers)

    response = portal.call(call)
    body = assert_problem(response, 401, "Unauthorized")
    assert "exactly one Authorization header" in body["detail"]
    assert response.headers["www-authenticate"] == "Bearer"
