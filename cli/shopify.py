"""`quarry stores add --platform shopify`: connect a Shopify store.

Two kinds of apps: a Dev Dashboard app (every app created since 1 January 2026), whose
client id and secret obtain expiring access tokens (--client-id-env, --client-secret-env),
or an older custom app's static `shpat_` token (--token-env, with --client-secret-env
optional: its API secret only verifies webhooks). Secrets are read from the environment
variables named, so they never appear in the shell history, the process list or our
output; they are stored only inside the encrypted connection settings
(Store.connection_secret). With QUARRY_SHOPIFY_WEBHOOK_URL set, the store is subscribed to
Quarry's webhooks.
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
from platforms.shopify.webhooks import subscribe
from quarry.crypto import SecretBox
from quarry.errors import InvalidRequest
from registry.accounts import create_store, get_account


def read_secret(variable: str, option: str = "--token-env") -> str:
    """The value of environment variable `variable`; InvalidRequest naming it if unset."""
    value = os.environ.get(variable, "").strip()
    if not value:
        field = option.removeprefix("--").replace("-", "_")
        raise InvalidRequest(
            f"{option}: environment variable {variable} is not set or empty",
            errors=[{"field": field, "message": f"{variable} is not set"}],
        )
    return value


def connection_from_options(
    domain: str,
    api_version: str,
    token_env: str | None,
    client_id_env: str | None,
    client_secret_env: str | None,
) -> ShopConnection:
    """The connection the options describe: a static token, or client credentials."""
    if token_env and client_id_env:
        raise InvalidRequest(
            "give --token-env (an older custom app) or --client-id-env with "
            "--client-secret-env (a Dev Dashboard app), not both",
            errors=[{"field": "token_env", "message": "not with client_id_env"}],
        )
    if not token_env and not (client_id_env and client_secret_env):
        raise InvalidRequest(
            "give --client-id-env and --client-secret-env (a Dev Dashboard app), or "
            "--token-env (the shpat_ token of an older custom app)",
            errors=[{"field": "client_id_env", "message": "credentials missing"}],
        )
    return ShopConnection(
        domain=domain,
        api_version=api_version,
        token=read_secret(token_env) if token_env else None,
        client_id=read_secret(client_id_env, "--client-id-env") if client_id_env else None,
        client_secret=(
            read_secret(client_secret_env, "--client-secret-env") if client_secret_env else None
        ),
    )


@click.command("add")
@click.option("--account", "account_id", required=True, help="Account that owns the store.")
@click.option("--platform", type=click.Choice(["shopify"]), required=True)
@click.option("--domain", required=True, help="The store's NAME.myshopify.com domain.")
@click.option(
    "--client-id-env",
    "client_id_env",
    default=None,
    help="Name of the environment variable that holds the Dev Dashboard app's client id.",
)
@click.option(
    "--client-secret-env",
    "client_secret_env",
    default=None,
    help="Name of the environment variable that holds the app's client secret (also "
    "verifies webhooks).",
)
@click.option(
    "--token-env",
    "token_env",
    default=None,
    help="Name of the environment variable that holds a static Admin API access token "
    "(custom apps created before 2026).",
)
@click.option("--name", default=None, help="Store name (default: the shop's name).")
@click.option("--api-version", default=None, help="Admin API version, e.g. 2026-10.")
@click.option("--json", "as_json", is_flag=True)
@pass_app
def add(
    app: AppContext,
    account_id: str,
    platform: str,
    domain: str,
    client_id_env: str | None,
    client_secret_env: str | None,
    token_env: str | None,
    name: str | None,
    api_version: str | None,
    as_json: bool,
) -> None:
    """Connect a store: check the credentials against the shop, then save them encrypted."""
    shopify = load_shopify_settings()
    connection = connection_from_options(
        normalize_domain(domain, "--domain"),
        check_api_version(api_version or shopify.api_version, "--api-version"),
        token_env,
        client_id_env,
        client_secret_env,
    )
    box = SecretBox(app.settings.fernet_keys)
    with app.registry.session() as session:
        get_account(session, account_id)  # fail before calling Shopify
    with ShopifyClient(connection, shopify) as client:
        shop = client.query(SHOP)["shop"]
        problems = subscribe(client, shopify.webhook_url) if shopify.webhook_url else []
    for problem in problems:
        click.echo(f"warning: webhook not subscribed: {problem}", err=True)
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
