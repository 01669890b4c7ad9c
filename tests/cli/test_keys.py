"""`quarry keys create|list|revoke`: the secret is printed once and works until revoked."""

from __future__ import annotations

from quarry.settings import Settings
from registry.db import Registry
from registry.keys import well_formed
from registry.principals import load_principal
from tests.cli.runner import assert_one_line_error, invoke, new_account, new_store, ok, ok_json


def authenticates(settings: Settings, secret: str) -> bool:
    registry = Registry(settings)
    try:
        with registry.engine.connect() as connection:
            return load_principal(connection, secret) is not None
    finally:
        registry.dispose()


def test_create_prints_the_key_once_and_it_authenticates(home: Settings) -> None:
    account_id = new_account()
    lines = ok("keys", "create", "--account", account_id, "--scopes", "read_data").splitlines()
    assert len(lines) == 2
    assert "shown once" in lines[0]
    key_id = lines[0].split()[1]
    secret = lines[1]
    assert key_id.startswith("key_")
    assert well_formed(secret)
    assert authenticates(home, secret)

    listed = ok("keys", "list")
    assert secret not in listed
    header, row = listed.splitlines()
    assert header.split() == ["ID", "PREFIX", "STATE", "SCOPES", "STORES"]
    assert row.startswith(key_id) and row.index("active") == header.index("STATE")
    assert row.endswith("all stores")


def test_create_json_and_list_json(home: Settings) -> None:
    account_id = new_account()
    store_id = new_store(home, account_id, "main")
    issued = ok_json(
        "keys",
        "create",
        "--account",
        account_id,
        "--scopes",
        "read_data,exports",
        "--stores",
        store_id,
    )
    assert set(issued) == {"id", "key"}
    (row,) = ok_json("keys", "list")
    assert row["id"] == issued["id"]
    assert row["account_id"] == account_id
    assert row["scopes"] == ["exports", "read_data"]
    assert row["store_ids"] == [store_id]
    assert row["revoked"] is False
    assert issued["key"].startswith(row["prefix"])
    assert issued["key"] not in str(row)


def test_revoke_stops_the_key_at_once(home: Settings) -> None:
    account_id = new_account()
    issued = ok_json("keys", "create", "--account", account_id)
    assert ok("keys", "revoke", issued["id"]).strip() == f"{issued['id']} revoked"
    assert not authenticates(home, issued["key"])
    assert ok_json("keys", "list")[0]["revoked"] is True
    assert "revoked" in ok("keys", "list")
    # Again, as JSON: revoking twice is fine and says so.
    assert ok_json("keys", "revoke", issued["id"]) == {"id": issued["id"], "revoked": True}


def test_unknown_account_is_one_error_line() -> None:
    result = invoke("keys", "create", "--account", "acc_nope")
    assert_one_line_error(result, "acc_nope", "does not exist")


def test_unknown_scope_is_one_error_line_and_issues_nothing() -> None:
    account_id = new_account()
    result = invoke("keys", "create", "--account", account_id, "--scopes", "read_data,admin")
    assert_one_line_error(result, "scopes", "admin")
    assert ok_json("keys", "list") == []


def test_a_store_of_another_account_is_one_error_line(home: Settings) -> None:
    account_id = new_account("Acme")
    other = new_account("Other")
    foreign = new_store(home, other, "foreign")
    result = invoke("keys", "create", "--account", account_id, "--stores", foreign)
    assert_one_line_error(result, foreign, "not stores of account")
    result = invoke("keys", "create", "--account", account_id, "--stores", "st_nope")
    assert_one_line_error(result, "st_nope")
    result = invoke("keys", "create", "--account", account_id, "--stores", " , ")
    assert_one_line_error(result, "at least one store")
    assert ok_json("keys", "list") == []


def test_revoking_an_unknown_key_is_one_error_line() -> None:
    assert_one_line_error(invoke("keys", "revoke", "key_nope"), "key_nope", "does not exist")


def test_listing_an_unknown_accounts_keys_or_stores_says_so(home: Settings) -> None:
    """An empty table would read as an account without keys or stores."""
    account_id = new_account()
    for group in ("keys", "stores"):
        assert_one_line_error(
            invoke(group, "list", "--account", "acc_nope"), "account 'acc_nope' does not exist"
        )
        assert ok_json(group, "list", "--account", account_id) == []
