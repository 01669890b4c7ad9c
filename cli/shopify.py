"""`quarry stores add --platform shopify`: connect a Shopify store.

The access token is read from the environment variable named by --token-env, so it never
appears in the shell history, the process list or our output; it is stored only inside the
encrypted connection settings (Store.connection_secret).
"""

from __future__ import annotations

import os

import click

from cli.context import AppContext, echo_json, pass_app
from cli.stores import store_json
from platforms.shopify.client import ShopifyClient
from platforms.shopify.queries import SHOP
from platforms.shopify.settings import (
    ShopConnection,
    check_api_version,
    load_shopify_settings,
    normalize_domain,
)
from quarry.crypto import SecretBox
from quarry.errors import InvalidRequest
from registry.accounts import create_store, get_account


def read_token(variable: str) -> str:
    """The token in environment variable `variable`; InvalidRequest naming it if unset."""
    token = os.environ.get(variable, "").strip()
    if not token:
        raise InvalidRequest(
            f"--token-env: environment variable {variable} is not set or empty",
            errors=[{"field": "token_env", "message": f"{variable} is not set"}],
        )
    return token


@click.command("add")
@click.option("--account", "account_id", required=True, help="Account that owns the store.")
@click.option("--platform", type=click.Choice(["shopify"]), required=True)
@click.option("--domain", required=True, help="The store's NAME.myshopify.com domain.")
@click.option(
    "--token-env",
    "token_env",
    required=True,
    help="Name of the environment variable that holds the Admin API access token.",
)
@click.option("--name", default=None, help="Store name (default: the shop's name).")
@click.option("--api-version", default=None, help="Admin API version, e.g. 2025-10.")
@click.option("--json", "as_json", is_flag=True)
@pass_app
def add(
    app: AppContext,
    account_id: str,
    platform: str,
    domain: str,
    token_env: str,
    name: str | None,
    api_version: str | None,
    as_json: bool,
) -> None:
    """Connect a store: check the token against the shop, then save it encrypted."""
    shopify = load_shopify_settings()
    connection = ShopConnection(
        domain=normalize_domain(domain, "--domain"),
        token=read_token(token_env),
        api_version=check_api_version(api_version or shopify.api_version, "--api-version"),
    )
    box = SecretBox(app.settings.fernet_keys)
    with app.registry.session() as session:
        get_account(session, account_id)  # fail before calling Shopify
    with ShopifyClient(connection, shopify) as client:
        shop = client.query(SHOP)["shop"]
    with app.registry.session() as session:
        store = create_store(
            session,
            account_id=account_id,
            name=name or shop["name"],
            domain=connection.domain,
            currency=shop["currencyCode"],
            timezone=shop["ianaTimezone"],
            platform=platform,
            connection_secret=connection.seal(box),
        )
        row = store_json(store)
    if as_json:
        echo_json(row)
        return
    click.echo(
        f"{row['id']}  {row['name']}  {row['myplatform_domain']}  {row['currency']}  "
        f"{row['timezone']}"
    )
