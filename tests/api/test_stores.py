"""GET /v1/stores: the stores within the key's scope, with every contract field."""

from __future__ import annotations

import pytest

from tests.api.conftest import Client, assert_problem, field_errors
from tests.api.world import World


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("a_all", ["st_a2", "st_a3", "st_a1"]),  # by name: Europa, Hostile, Main Street
        ("a_exports", ["st_a2", "st_a3", "st_a1"]),
        ("a_one", ["st_a1"]),
        ("a_two", ["st_a2", "st_a1"]),
        ("b_all", ["st_b1"]),
    ],
)
def test_stores_are_those_the_key_can_read(
    client: Client, world: World, key: str, expected: list[str]
) -> None:
    response = client.get("/v1/stores", key=world.keys[key])
    assert response.status_code == 200
    assert response.headers["cache-control"] == "no-store"
    assert [s["id"] for s in response.json()] == expected


def test_store_fields(client: Client, world: World) -> None:
    stores = {s["id"]: s for s in client.get("/v1/stores", key=world.keys["a_all"]).json()}
    assert stores["st_a1"] == {
        "id": "st_a1",
        "name": "Main Street",
        "myplatform_domain": "st_a1.example.com",
        "currency": "USD",
        "timezone": "UTC",
        "status": "active",
        "last_synced_at": "2024-04-01T09:30:15.250000Z",
    }
    assert stores["st_a3"]["name"] == "Hostile 東京"
    assert stores["st_a3"]["currency"] == "JPY"
    assert stores["st_a2"]["last_synced_at"] is None


def test_stores_need_the_api_plan(client: Client, world: World) -> None:
    assert_problem(client.get("/v1/stores", key=world.keys["c_all"]), 403, "Plan upgrade required")


def test_stores_take_no_parameters(client: Client, world: World) -> None:
    response = client.get("/v1/stores", key=world.keys["a_all"], params={"store_ids": "st_a1"})
    assert field_errors(assert_problem(response, 400, "Invalid request")) == ["store_ids"]
