"""`quarry`: one group assembling the command modules. Errors are one line and exit 1."""

from __future__ import annotations

import logging
import warnings
from typing import Any

import click

from cli.context import AppContext, QuarryGroup, pass_app
from quarry import logs
from quarry.errors import QuarryError

# The CLI's text lines: what went wrong, without a time stamp the terminal does not need.
CLI_FORMAT = "%(levelname)s %(name)s: %(message)s"


def _show_warning(message: Any, category: Any, *_args: Any, **_kwargs: Any) -> None:
    click.echo(f"warning: {message}", err=True)


@click.group(cls=QuarryGroup)
@click.version_option(package_name="quarry", message="quarry %(version)s")
@click.pass_context
def cli(ctx: click.Context) -> None:
    """Quarry: sync commerce stores into a warehouse, serve /v1, run exports."""
    warnings.showwarning = _show_warning
    app = ctx.ensure_object(AppContext)
    try:
        settings = app.settings
    except QuarryError:
        # The command reports the bad setting itself, as one `error:` line.
        logging.basicConfig(level=logging.WARNING, format=CLI_FORMAT)
        return
    logs.configure(settings, default_level="WARNING", text_format=CLI_FORMAT)


@cli.command()
@pass_app
def migrate(app: AppContext) -> None:
    """Apply registry migrations (every command that needs them applies them too)."""
    app.registry  # noqa: B018 - building the registry migrates it
    click.echo(f"registry at {app.settings.resolved_database_url} is up to date")


def _register() -> None:
    # Command modules are imported here so that `quarry --help` lists them all, and each
    # module stays small and owns one group.
    from cli import accounts, demo, exports, keys, run, shopify, stores

    cli.add_command(accounts.accounts)
    stores.stores.add_command(shopify.add)
    cli.add_command(stores.stores)
    cli.add_command(keys.keys)
    cli.add_command(demo.demo)
    cli.add_command(exports.exports)
    for command in run.COMMANDS:
        cli.add_command(command)
    for command in run.DEMO_COMMANDS:
        demo.demo.add_command(command)


_register()
