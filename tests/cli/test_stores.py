"""`quarry stores list|add|remove` (`add` is platform-specific: tests/platforms)."""

from __future__ import annotations

from quarry.settings import Settings
from tests.cli.runner import assert_one_line_error, invoke, new_account, new_store, ok, ok_json


def test_help_names_every_command() -> None:
    text = ok("stores", "--help")
    summary = text.split("Options:")[0]
    assert all(word in summary for word in ("List", "add", "remove")), summary
    commands = {line.split()[0] for line in text.split("Commands:")[1].splitlines() if line}
    assert commands == {"add", "list", "remove"}


def test_list_is_empty_at_first() -> None:
    assert ok("stores", "list").split() == [
        "ID",
        "ACCOUNT",
        "CURRENCY",
        "TIMEZONE",
        "STATUS",
        "NAME",
    ]
    assert ok_json("stores", "list") == []


def test_list_json_has_the_store_fields(home: Settings) -> None:
    account_id = new_account("Acme")
    store_id = new_store(home, account_id, "Berlin")
    (row,) = ok_json("stores", "list")
    assert row == {
        "id": store_id,
        "account_id": account_id,
        "name": "Berlin",
        "myplatform_domain": "berlin.example",
        "platform": "demo",
        "currency": "EUR",
        "timezone": "Europe/Berlin",
        "status": "active",
        "last_synced_at": None,
    }
    _header, line = ok("stores", "list").splitlines()
    assert line.split() == [store_id, account_id, "EUR", "Europe/Berlin", "active", "Berlin"]


def test_list_of_one_account(home: Settings) -> None:
    acme = new_account("Acme")
    other = new_account("Other")
    mine = new_store(home, acme, "Mine")
    new_store(home, other, "Theirs")
    assert [row["id"] for row in ok_json("stores", "list", "--account", acme)] == [mine]
    assert len(ok_json("stores", "list")) == 2


def test_remove_of_an_unknown_store_is_one_error_line() -> None:
    assert_one_line_error(invoke("stores", "remove", "st_nope"), "st_nope", "does not exist")


def test_remove_deletes_the_store(home: Settings) -> None:
    account_id = new_account("Acme")
    # A platform with no local files keeps this test about the registry and the warehouse.
    store_id = new_store(home, account_id, "Gone", platform="shopify")
    kept = new_store(home, account_id, "Kept", platform="shopify")
    assert ok("stores", "remove", store_id).strip() == f"{store_id} removed"
    assert [row["id"] for row in ok_json("stores", "list")] == [kept]
    removed = ok_json("stores", "remove", kept)
    assert removed == {"id": kept, "removed": True, "export_files_removed": 0}
    assert_one_line_error(invoke("stores", "remove", store_id), store_id, "does not exist")
