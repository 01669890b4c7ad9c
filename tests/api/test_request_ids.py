"""X-Request-Id on every response: the client's own when sane, a fresh one otherwise."""

from __future__ import annotations

import pytest

from tests.api.conftest import Client
from tests.api.world import World


def test_every_response_has_one_and_each_is_new(client: Client, world: World) -> None:
    ids = set()
    for path, key in (
        ("/healthz", None),
        ("/v1/account", world.keys["a_all"]),
        ("/v1/account", None),  # a 401 problem too
        ("/v1/nowhere", world.keys["a_all"]),  # and a 404
    ):
        response = client.get(path, key=key)
        ids.add(response.headers["x-request-id"])
    assert len(ids) == 4
    assert all(len(i) == 32 for i in ids)


def test_a_sane_id_of_the_client_is_echoed(client: Client, world: World) -> None:
    response = client.get(
        "/v1/account", key=world.keys["a_all"], headers={"X-Request-Id": "job-42:step/7"}
    )
    assert response.headers["x-request-id"] == "job-42:step/7"


@pytest.mark.parametrize("given", ["", "has space", "x" * 129, 'quote"d', "ünï"])
def test_anything_else_is_replaced(client: Client, given: str) -> None:
    response = client.get("/healthz", headers={"X-Request-Id": given.encode()})
    assert response.headers["x-request-id"] != given
    assert len(response.headers["x-request-id"]) == 32
