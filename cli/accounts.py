"""`quarry accounts`: create and update accounts."""

from __future__ import annotations

import click

from cli.context import AppContext, echo_json, echo_table, pass_app
from registry.accounts import (
    check_currency,
    check_name,
    check_timezone,
    create_account,
    get_account,
    list_accounts,
)


def account_json(account: object) -> dict[str, object]:
    return {
        "account_id": account.id,  # type: ignore[attr-defined]
        "name": account.name,  # type: ignore[attr-defined]
        "subscription_id": account.subscription_id,  # type: ignore[attr-defined]
        "api_enabled": account.api_enabled,  # type: ignore[attr-defined]
        "currency": account.currency,  # type: ignore[attr-defined]
        "timezone": account.timezone,  # type: ignore[attr-defined]
    }


@click.group()
def accounts() -> None:
    """Create, update and list accounts."""


@accounts.command("create")
@click.option("--name", required=True)
@click.option("--currency", required=True, help="ISO 4217 code, e.g. USD.")
@click.option("--timezone", required=True, help="IANA zone, e.g. America/New_York.")
@click.option("--json", "as_json", is_flag=True, help="Print the account as JSON.")
@pass_app
def create(app: AppContext, name: str, currency: str, timezone: str, as_json: bool) -> None:
    """Create an account."""
    # Checked before the registry is opened, so bad input leaves nothing behind: not even
    # a fresh registry file in an empty QUARRY_HOME.
    check_name(name)
    check_currency(currency)
    check_timezone(timezone)
    with app.registry.session() as session:
        account = create_account(session, name=name, currency=currency, timezone=timezone)
        shown = account_json(account)
    if as_json:
        echo_json(shown)
    else:
        click.echo(shown["account_id"])


@accounts.command("update")
@click.argument("account_id")
@click.option("--api-enabled", type=click.BOOL, required=True, help="true or false.")
@click.option("--json", "as_json", is_flag=True, help="Print the account as JSON.")
@pass_app
def update(app: AppContext, account_id: str, api_enabled: bool, as_json: bool) -> None:
    """Change whether the account's plan includes the API."""
    with app.registry.session() as session:
        account = get_account(session, account_id)
        account.api_enabled = api_enabled
        shown = account_json(account)
    if as_json:
        echo_json(shown)
        return
    click.echo(f"{account_id}: api_enabled={str(api_enabled).lower()}")


@accounts.command("list")
@click.option("--json", "as_json", is_flag=True)
@pass_app
def list_(app: AppContext, as_json: bool) -> None:
    """List accounts."""
    with app.registry.session() as session:
        rows = [account_json(a) for a in list_accounts(session)]
    if as_json:
        echo_json(rows)
        return
    echo_table(
        ("ID", "CURRENCY", "TIMEZONE", "NAME"),
        ((r["account_id"], r["currency"], r["timezone"], r["name"]) for r in rows),
    )
