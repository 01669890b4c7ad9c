"""Runs `quarry` commands in-process with click's CliRunner, through the real root group
(cli.main), and the factories CLI tests share."""

from __future__ import annotations

import json
from typing import Any

from click.testing import CliRunner, Result

from cli.main import cli as root
from quarry.settings import Settings
from registry.db import Registry
from tests.factories import add_store


def invoke(*args: str, input: str | None = None) -> Result:
    """Run `quarry ARGS...` with the current environment (and `input` on stdin); a new
    AppContext each time, as a new process would have."""
    return CliRunner().invoke(root, list(args), input=input, catch_exceptions=True)


def ok(*args: str) -> str:
    """Run a command that must succeed; its stdout."""
    result = invoke(*args)
    assert result.exit_code == 0, (result.output, result.stderr, result.exception)
    return result.stdout


def ok_json(*args: str) -> Any:
    return json.loads(ok(*args, "--json"))


def assert_one_line_error(result: Result, *fragments: str) -> str:
    """The command failed with exit 1 and a single `error: ...` line on stderr, nothing on
    stdout and no traceback; returns that line."""
    assert result.exit_code == 1, (result.output, result.exception)
    assert isinstance(result.exception, SystemExit), result.exception
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    line = lines[0]
    assert line.startswith("error: "), line
    assert "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in line
    return line


def new_account(name: str = "Acme") -> str:
    """A new account made by `quarry accounts create` (USD, UTC); its id."""
    return ok(
        "accounts", "create", "--name", name, "--currency", "USD", "--timezone", "UTC"
    ).strip()


def new_store(settings: Settings, account_id: str, name: str, **fields: str) -> str:
    """A new store of `account_id` (stores are added by platform commands, so this goes
    through the registry; tests.factories.add_store's defaults)."""
    registry = Registry(settings)
    try:
        return add_store(registry, account_id, name, **fields)
    finally:
        registry.dispose()
