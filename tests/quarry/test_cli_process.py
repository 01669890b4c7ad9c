"""The installed `quarry` executable, as a user runs it: exit statuses, one `error:` line
on stderr and no traceback, in a real process with its own environment."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from quarry.settings import Settings

QUARRY = Path(sys.executable).with_name("quarry")


def run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(QUARRY), *args],
        env=os.environ | env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def assert_one_line_error(result: subprocess.CompletedProcess[str], *fragments: str) -> None:
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for fragment in fragments:
        assert fragment in lines[0]


def test_help_lists_the_commands(quarry_env: Settings) -> None:
    result = run("--help")
    assert result.returncode == 0, result.stderr
    for command in ("migrate", "accounts", "stores", "keys"):
        assert command in result.stdout


def test_migrate_then_create_and_list(quarry_env: Settings) -> None:
    result = run("migrate")
    assert result.returncode == 0, result.stderr
    assert "up to date" in result.stdout
    assert (quarry_env.home / "registry.db").exists()
    created = run("accounts", "create", "--name", "Acme", "--currency", "USD", "--timezone", "UTC")
    assert created.returncode == 0, created.stderr
    assert created.stdout.strip() in run("accounts", "list").stdout


def test_an_unreachable_database(quarry_env: Settings) -> None:
    result = run(
        "accounts", "list", QUARRY_DATABASE_URL="postgresql+psycopg://postgres@127.0.0.1:1/x"
    )
    assert_one_line_error(result, "cannot reach the registry database", "127.0.0.1:1")


def test_an_unwritable_home(quarry_env: Settings, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    result = run("migrate", QUARRY_HOME=str(blocker / "sub"))
    assert_one_line_error(result, "cannot write to", "QUARRY_HOME")


@pytest.mark.parametrize(("currency", "timezone"), [("usd", "UTC"), ("USD", "Nowhere/Atlantis")])
def test_bad_input_writes_nothing(quarry_env: Settings, currency: str, timezone: str) -> None:
    result = run(
        "accounts", "create", "--name", "Acme", "--currency", currency, "--timezone", timezone
    )
    assert_one_line_error(result)
    assert not quarry_env.home.exists()


@pytest.mark.parametrize(
    "command",
    [
        ("stores", "remove", "st_nope"),
        ("keys", "revoke", "key_nope"),
        ("accounts", "update", "acc_nope", "--api-enabled", "false"),
    ],
)
def test_an_unknown_id(quarry_env: Settings, command: tuple[str, ...]) -> None:
    assert_one_line_error(run(*command), "does not exist")
