"""Runs `quarry` commands in-process with click's CliRunner.

The root group here is assembled like cli.main's (same group class, same context
object) from the command groups under test, so these tests do not depend on every other
command module being importable."""

from __future__ import annotations

import json
from typing import Any

import click
from click.testing import CliRunner, Result

from cli import accounts, keys, stores
from cli.context import AppContext, QuarryGroup


@click.group(cls=QuarryGroup)
@click.pass_context
def root(ctx: click.Context) -> None:
    ctx.ensure_object(AppContext)


root.add_command(accounts.accounts)
root.add_command(keys.keys)
root.add_command(stores.stores)


def invoke(*args: str) -> Result:
    """Run `quarry ARGS...` with the current environment; a new AppContext each time, as a
    new process would have."""
    return CliRunner().invoke(root, list(args), catch_exceptions=True)


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
