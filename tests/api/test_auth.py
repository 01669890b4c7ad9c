"""Keys and access: 401 for any key that is not live, then plan, then scope, then the
request; keys only in the Authorization header; secrets never in logs or responses."""

from __future__ import annotations

import logging
import secrets

import pytest

from registry.keys import KEY_PREFIX, _base62, _checksum, create_key, revoke_key
from tests.api.conftest import Client, assert_problem, field_errors
from tests.api.world import World

V1 = ("/v1/account", "/v1/stores", "/v1/datasets", "/v1/orders", "/v1/orders/ord_st_a1_01")


def _unknown_key() -> str:
    """Well formed, right checksum, never issued."""
    body = _base62(secrets.randbits(256), 43)
    return KEY_PREFIX + body + _checksum(body)


@pytest.mark.parametrize("path", V1)
def test_missing_key_is_401_with_bearer_challenge(client: Client, path: str) -> None:
    response = client.get(path)
    assert_problem(response, 401, "Unauthorized")
    assert response.headers["WWW-Authenticate"] == "Bearer"


@pytest.mark.parametrize(
    "header",
    [
        "Bearer",
        "Bearer ",
        "Bearer not-a-key",
        "Basic dXNlcjpwYXNz",
        "Token {key}",
        "Bearer {key}x",
        "Bearer {key_bad_checksum}",
        "Bearer {unknown}",
        "Bearer {revoked}",
    ],
)
@pytest.mark.parametrize("path", V1)
def test_bad_keys_are_401(client: Client, world: World, header: str, path: str) -> None:
    key = world.keys["a_all"]
    value = header.format(
        key=key,
        key_bad_checksum=key[:-1] + ("A" if key[-1] != "A" else "B"),
        unknown=_unknown_key(),
        revoked=world.keys["a_revoked"],
    )
    response = client.get(path, headers={"Authorization": value})
    body = assert_problem(response, 401, "Unauthorized")
    assert response.headers["WWW-Authenticate"] == "Bearer"
    assert key not in response.text and world.keys["a_revoked"] not in body["detail"]


@pytest.mark.parametrize("name", ["api_key", "key", "access_token", "token"])
def test_key_in_query_string_is_never_accepted(client: Client, world: World, name: str) -> None:
    secret = world.keys["a_all"]
    response = client.get("/v1/account", params={name: secret})
    assert_problem(response, 401, "Unauthorized")
    # With a real key in the header, the stray parameter is an unknown parameter, named
    # without echoing its value.
    response = client.get("/v1/orders", key=secret, params={name: secret})
    body = assert_problem(response, 400, "Invalid request")
    assert field_errors(body) == [name] and name in body["detail"]
    assert secret not in response.text


def test_revocation_takes_effect_on_the_next_request(client: Client, world: World) -> None:
    with world.registry.session() as session:
        issued = create_key(session, account_id=world.accounts["a"], scopes=["read_data"])
    assert client.get("/v1/orders", key=issued.secret).status_code == 200
    with world.registry.session() as session:
        revoke_key(session, issued.row.id)
    assert_problem(client.get("/v1/orders", key=issued.secret), 401, "Unauthorized")
    assert_problem(client.get("/v1/account", key=issued.secret), 401, "Unauthorized")


def test_plan_without_api_is_403_except_account(client: Client, world: World) -> None:
    key = world.keys["c_all"]
    for path in ("/v1/stores", "/v1/datasets", "/v1/orders", "/v1/orders/ord_st_c1_01"):
        assert_problem(client.get(path, key=key), 403, "Plan upgrade required")
    account = client.get("/v1/account", key=key)
    assert account.status_code == 200
    assert account.json()["api_enabled"] is False


def test_scope_is_checked_after_plan(client: Client, world: World) -> None:
    assert_problem(
        client.get("/v1/orders", key=world.keys["c_exports"]), 403, "Plan upgrade required"
    )
    assert_problem(client.get("/v1/orders", key=world.keys["a_exports"]), 403, "Insufficient scope")
    assert_problem(
        client.get("/v1/customers/cus_st_a1_1", key=world.keys["a_exports"]),
        403,
        "Insufficient scope",
    )


@pytest.mark.parametrize("path", ["/v1/account", "/v1/stores", "/v1/datasets"])
def test_discovery_answers_any_valid_key(client: Client, world: World, path: str) -> None:
    assert client.get(path, key=world.keys["a_exports"]).status_code == 200


def test_the_request_is_checked_last(client: Client, world: World) -> None:
    bad = {"page_size": "999", "nope": "1"}
    assert_problem(client.get("/v1/orders", params=bad), 401, "Unauthorized")
    assert_problem(
        client.get("/v1/orders", key=world.keys["a_revoked"], params=bad), 401, "Unauthorized"
    )
    assert_problem(
        client.get("/v1/orders", key=world.keys["c_all"], params=bad), 403, "Plan upgrade required"
    )
    assert_problem(
        client.get("/v1/orders", key=world.keys["a_exports"], params=bad), 403, "Insufficient scope"
    )
    assert_problem(
        client.get("/v1/orders", key=world.keys["a_read"], params=bad), 400, "Invalid request"
    )


def test_secrets_never_reach_logs(
    client: Client, world: World, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    secrets_used = [world.keys["a_all"], world.keys["a_revoked"], world.keys["c_all"]]
    # A uvicorn started earlier in this process (a fake server) leaves its loggers at its
    # own level and not propagating; caplog listens at the root.
    for name in ("uvicorn", "uvicorn.access", "uvicorn.error"):
        monkeypatch.setattr(logging.getLogger(name), "propagate", True)
        caplog.set_level(logging.DEBUG, logger=name)
    with caplog.at_level(logging.DEBUG):
        for secret in secrets_used:
            for path in (*V1, "/v1/orders?page=0", "/v1/nowhere"):
                client.get(path, key=secret)
        # A key where it does not belong, as uvicorn's access log would write it.
        logging.getLogger("uvicorn.access").info(
            '%s - "%s %s HTTP/%s" %d',
            "127.0.0.1:5000",
            "GET",
            f"/v1/orders?api_key={secrets_used[0]}",
            "1.1",
            401,
        )
    assert caplog.records
    server_lines = "\n".join(
        r.getMessage() for r in caplog.records if not r.name.startswith(("httpx", "httpcore"))
    )
    for secret in secrets_used:
        assert secret not in server_lines
        assert secret[11:] not in server_lines  # nor the part after the visible prefix
    assert "api_key=qk_***" in server_lines
