"""What a user sees when the environment or the input is wrong: one `error:` line on
stderr, exit status 1, no traceback, and nothing half-written."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from cli.main import cli
from quarry.settings import Settings
from tests.cli.runner import assert_one_line_error, invoke, ok, ok_json

COMMANDS = [
    ("accounts", "list"),
    ("accounts", "create", "--name", "Acme", "--currency", "USD", "--timezone", "UTC"),
    ("accounts", "update", "acc_x", "--api-enabled", "false"),
    ("stores", "list"),
    ("stores", "remove", "st_x"),
    ("keys", "list"),
    ("keys", "create", "--account", "acc_x"),
    ("keys", "revoke", "key_x"),
]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c[:2]))
def test_an_unreachable_database(
    quarry_env: Settings, monkeypatch: pytest.MonkeyPatch, command: tuple[str, ...]
) -> None:
    monkeypatch.setenv(
        "QUARRY_DATABASE_URL", "postgresql+psycopg://postgres:hunter2@127.0.0.1:1/quarry"
    )
    line = assert_one_line_error(invoke(*command), "cannot reach the registry database")
    assert "127.0.0.1:1" in line
    assert "hunter2" not in line
    assert not (quarry_env.home / "registry.db").exists()


def test_a_database_url_that_does_not_parse(
    quarry_env: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("QUARRY_DATABASE_URL", "registry please")
    assert_one_line_error(invoke("accounts", "list"), "QUARRY_DATABASE_URL")


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c[:2]))
def test_an_unwritable_home(
    quarry_env: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: tuple[str, ...]
) -> None:
    # Tests run as root, which permission bits do not stop; nobody can create a directory
    # under a regular file.
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("QUARRY_HOME", str(blocker / "home"))
    assert_one_line_error(invoke(*command), f"cannot write to {blocker / 'home'}", "QUARRY_HOME")


def test_a_setting_that_does_not_parse(
    quarry_env: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("QUARRY_DUCKDB_THREADS", "many")
    assert_one_line_error(invoke("accounts", "list"), "QUARRY_DUCKDB_THREADS")


@pytest.mark.parametrize(
    ("command", "fragment"),
    [
        (("accounts", "update", "acc_nope", "--api-enabled", "true"), "account 'acc_nope'"),
        (("keys", "create", "--account", "acc_nope"), "account 'acc_nope'"),
        (("keys", "revoke", "key_nope"), "key 'key_nope'"),
        (("stores", "remove", "st_nope"), "store 'st_nope'"),
    ],
    ids=lambda v: " ".join(v[:2]) if isinstance(v, tuple) else "",
)
def test_an_unknown_id(quarry_env: Settings, command: tuple[str, ...], fragment: str) -> None:
    assert_one_line_error(invoke(*command), fragment, "does not exist")


@pytest.mark.parametrize(
    ("currency", "timezone", "fragment"),
    [("usd", "UTC", "currency"), ("USD", "Nowhere/Atlantis", "timezone")],
)
def test_an_invalid_currency_or_timezone(
    quarry_env: Settings, currency: str, timezone: str, fragment: str
) -> None:
    result = invoke(
        "accounts", "create", "--name", "Acme", "--currency", currency, "--timezone", timezone
    )
    assert_one_line_error(result, f"{fragment}:")
    assert not quarry_env.home.exists() or not any(quarry_env.home.iterdir())
    assert ok_json("accounts", "list") == []


def test_a_failed_command_leaves_earlier_data_alone(quarry_env: Settings) -> None:
    account_id = ok(
        "accounts", "create", "--name", "Acme", "--currency", "USD", "--timezone", "UTC"
    ).strip()
    assert_one_line_error(invoke("keys", "create", "--account", account_id, "--stores", "st_x"))
    assert_one_line_error(invoke("accounts", "update", "acc_other", "--api-enabled", "false"))
    assert [a["account_id"] for a in ok_json("accounts", "list")] == [account_id]
    assert ok_json("keys", "list") == []


@pytest.mark.parametrize("command", [("sync",), ("serve", "--port", "1")], ids=" ".join)
def test_a_home_with_a_delta_warehouse_is_one_line_saying_how_to_rebuild(
    quarry_env: Settings, command: tuple[str, ...]
) -> None:
    # What an earlier Quarry left: one Delta table per warehouse table.
    (quarry_env.warehouse_dir / "orders" / "_delta_log").mkdir(parents=True)
    result = CliRunner().invoke(cli, list(command), catch_exceptions=True)
    line = assert_one_line_error(result, "Delta Lake", "quarry sync --full")
    assert str(quarry_env.warehouse_dir) in line
