"""`quarry accounts create|update|list`."""

from __future__ import annotations

import pytest

from quarry.settings import Settings
from tests.cli.runner import assert_one_line_error, invoke, ok, ok_json


def test_create_prints_the_new_id(home: Settings) -> None:
    account_id = ok(
        "accounts", "create", "--name", "Acme", "--currency", "USD", "--timezone", "UTC"
    ).strip()
    assert account_id.startswith("acc_")
    header, row = ok("accounts", "list").splitlines()
    assert header.split() == ["ID", "CURRENCY", "TIMEZONE", "NAME"]
    assert row.split() == [account_id, "USD", "UTC", "Acme"]
    # Columns line up under their header.
    assert row.index("USD") == header.index("CURRENCY")


def test_create_json_shows_the_account() -> None:
    shown = ok_json(
        "accounts",
        "create",
        "--name",
        "Acme Ltd",
        "--currency",
        "GBP",
        "--timezone",
        "Europe/London",
    )
    assert shown["name"] == "Acme Ltd"
    assert (shown["currency"], shown["timezone"]) == ("GBP", "Europe/London")
    assert shown["api_enabled"] is True
    assert shown["account_id"].startswith("acc_")
    assert shown["subscription_id"].startswith("sub_")
    assert ok_json("accounts", "list") == [shown]


def test_list_is_empty_at_first() -> None:
    assert ok("accounts", "list").split() == ["ID", "CURRENCY", "TIMEZONE", "NAME"]
    assert ok_json("accounts", "list") == []


def test_update_switches_the_api_off_and_on() -> None:
    account_id = ok(
        "accounts", "create", "--name", "Acme", "--currency", "USD", "--timezone", "UTC"
    ).strip()
    assert ok("accounts", "update", account_id, "--api-enabled", "false").strip() == (
        f"{account_id}: api_enabled=false"
    )
    assert ok_json("accounts", "list")[0]["api_enabled"] is False
    shown = ok_json("accounts", "update", account_id, "--api-enabled", "true")
    assert shown["account_id"] == account_id and shown["api_enabled"] is True
    assert ok_json("accounts", "list") == [shown]


def test_update_of_an_unknown_account_is_one_error_line() -> None:
    result = invoke("accounts", "update", "acc_nope", "--api-enabled", "false")
    assert_one_line_error(result, "acc_nope", "does not exist")


def test_update_needs_a_boolean() -> None:
    result = invoke("accounts", "update", "acc_x", "--api-enabled", "perhaps")
    assert result.exit_code == 2
    assert "perhaps" in result.stderr


@pytest.mark.parametrize(
    ("option", "value", "fragment"),
    [
        ("--currency", "usd", "currency: 'usd'"),
        ("--currency", "EURO", "currency: 'EURO'"),
        ("--currency", "XXX", "currency: 'XXX' is not an ISO 4217 currency code"),
        ("--name", "  ", "name: a name is required"),
        ("--timezone", "Mars/Base", "timezone: 'Mars/Base'"),
        ("--timezone", "UTC+3", "timezone: 'UTC+3'"),
    ],
)
def test_bad_input_is_one_error_line_and_writes_nothing(
    home: Settings, option: str, value: str, fragment: str
) -> None:
    values = {"--name": "Acme", "--currency": "USD", "--timezone": "UTC"} | {option: value}
    result = invoke("accounts", "create", *(arg for pair in values.items() for arg in pair))
    assert_one_line_error(result, fragment)
    # Checked before the registry is opened: not even an empty registry is left behind.
    assert not (home.home / "registry.db").exists()
    assert ok_json("accounts", "list") == []


def test_version_names_the_installed_package() -> None:
    from importlib.metadata import version

    result = invoke("--version")
    assert result.exit_code == 0
    assert result.stdout.strip() == f"quarry {version('quarry')}"
