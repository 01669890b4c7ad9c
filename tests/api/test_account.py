"""GET /v1/account: the key's account, its scopes and how many stores it can read."""

from __future__ import annotations

import pytest

from tests.api.conftest import Client, assert_problem, field_errors
from tests.api.world import World


@pytest.mark.parametrize(
    ("key", "account", "store_count", "scopes"),
    [
        ("a_all", "a", 3, ["exports", "read_data"]),
        ("a_one", "a", 1, ["read_data"]),
        ("a_two", "a", 2, ["read_data"]),
        ("a_exports", "a", 3, ["exports"]),
        ("b_all", "b", 1, ["exports", "read_data"]),
    ],
)
def test_account_describes_the_key(
    client: Client, world: World, key: str, account: str, store_count: int, scopes: list[str]
) -> None:
    response = client.get("/v1/account", key=world.keys[key])
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.headers["cache-control"] == "no-store"
    body = response.json()
    assert set(body) == {
        "account_id",
        "account_name",
        "subscription_id",
        "api_enabled",
        "store_count",
        "scopes",
        "currency",
        "timezone",
    }
    assert body["account_id"] == world.accounts[account]
    assert body["account_name"] == f"Account {account.upper()}"
    assert body["subscription_id"].startswith("sub_")
    assert body["api_enabled"] is True
    assert body["store_count"] == store_count
    assert body["scopes"] == scopes
    assert (body["currency"], body["timezone"]) == {
        "a": ("USD", "America/New_York"),
        "b": ("GBP", "Europe/London"),
    }[account]


def test_account_answers_without_the_api_plan(client: Client, world: World) -> None:
    body = client.get("/v1/account", key=world.keys["c_exports"]).json()
    assert body["api_enabled"] is False
    assert body["account_id"] == world.accounts["c"]
    assert body["scopes"] == ["exports"]


def test_account_takes_no_parameters(client: Client, world: World) -> None:
    response = client.get("/v1/account", key=world.keys["a_all"], params={"verbose": "1"})
    body = assert_problem(response, 400, "Invalid request")
    assert field_errors(body) == ["verbose"] and "verbose" in body["detail"]
