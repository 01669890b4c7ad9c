"""`quarry stores add --platform shopify` against the fake shop."""

from __future__ import annotations

import json
import logging

import pytest
from click.testing import CliRunner

from cli.context import AppContext
from cli.shopify import add
from platforms.connectors import connector_for
from platforms.shopify.connector import ShopifyConnector
from platforms.shopify.errors import ShopifyAuthError
from quarry.crypto import SecretBox
from quarry.errors import InvalidRequest
from registry.accounts import create_account, list_stores
from tests.platforms.shopify.fake_shopify import TOKEN


@pytest.fixture
def app(quarry_env, fake, monkeypatch) -> AppContext:
    monkeypatch.setenv("QUARRY_SHOPIFY_BASE_URL", fake.url)
    monkeypatch.setenv("SHOP_TOKEN", TOKEN)
    return AppContext()


@pytest.fixture
def account_id(app: AppContext) -> str:
    with app.registry.session() as session:
        return create_account(session, name="Acme", currency="USD", timezone="America/New_York").id


def invoke(app: AppContext, *args: str):
    return CliRunner().invoke(add, list(args), obj=app)


def add_shop(app: AppContext, account_id: str, *args: str):
    """`stores add` of the fake shop to `account_id`, with `args` (the credentials)."""
    return invoke(
        app, "--account", account_id, "--platform", "shopify",
        "--domain", "quarry-test.myshopify.com", *args,
    )  # fmt: skip


def test_add_fetches_the_shop_and_seals_the_token(app, account_id, fake, caplog):
    caplog.set_level(logging.DEBUG)
    result = invoke(
        app,
        "--account",
        account_id,
        "--platform",
        "shopify",
        "--domain",
        "Quarry-Test.myshopify.com",
        "--token-env",
        "SHOP_TOKEN",
        "--json",
    )
    assert result.exit_code == 0, result.output
    shown = json.loads(result.stdout)
    assert shown["name"] == "Quarry Test Shop"
    assert shown["myplatform_domain"] == "quarry-test.myshopify.com"
    assert (shown["currency"], shown["timezone"]) == ("EUR", "Europe/Berlin")
    assert shown["platform"] == "shopify"
    assert TOKEN not in result.output and TOKEN not in caplog.text

    with app.registry.session() as session:
        (store,) = list_stores(session, account_id)
        secret = store.connection_secret
        assert secret and TOKEN not in secret
        assert SecretBox(app.settings.fernet_keys).open(secret) == {
            "domain": "quarry-test.myshopify.com",
            "token": TOKEN,
            "api_version": "2026-10",
        }
        connector = connector_for(app.settings, store)
    assert isinstance(connector, ShopifyConnector)
    assert TOKEN not in repr(connector.connection)
    assert connector.count("orders") == 3
    shop_queries = [e for e in fake.shop.log if e["operation"] == "QuarryShop"]
    assert len(shop_queries) == 1


def test_name_and_api_version_can_be_given(app, account_id):
    result = add_shop(
        app,
        account_id,
        "--token-env",
        "SHOP_TOKEN",
        "--name",
        "EU shop",
        "--api-version",
        "2025-07",
    )
    assert result.exit_code == 0, result.output
    assert "EU shop" in result.output
    with app.registry.session() as session:
        (store,) = list_stores(session, account_id)
        doc = SecretBox(app.settings.fernet_keys).open(store.connection_secret)
    assert doc["api_version"] == "2025-07"


def test_unset_token_variable_is_named(app, account_id, monkeypatch):
    monkeypatch.delenv("MISSING_TOKEN", raising=False)
    result = add_shop(
        app,
        account_id,
        "--token-env",
        "MISSING_TOKEN",
    )
    assert isinstance(result.exception, InvalidRequest)
    assert "MISSING_TOKEN" in str(result.exception)
    with app.registry.session() as session:
        assert list_stores(session, account_id) == []


@pytest.mark.parametrize("domain", ["quarry-test.com", "https://shop.example.com", "my shop"])
def test_domain_must_be_a_myshopify_domain(app, account_id, domain):
    result = invoke(
        app,
        "--account",
        account_id,
        "--platform",
        "shopify",
        "--domain",
        domain,
        "--token-env",
        "SHOP_TOKEN",
    )
    assert isinstance(result.exception, InvalidRequest)
    assert "myshopify" in str(result.exception)


def test_a_refused_token_creates_no_store(app, account_id, monkeypatch):
    monkeypatch.setenv("SHOP_TOKEN", "shpat_not_the_right_one")
    result = add_shop(
        app,
        account_id,
        "--token-env",
        "SHOP_TOKEN",
    )
    assert isinstance(result.exception, ShopifyAuthError)
    assert "shpat_not_the_right_one" not in str(result.exception)
    with app.registry.session() as session:
        assert list_stores(session, account_id) == []


def test_add_with_client_credentials_seals_them_and_subscribes_webhooks(
    app, account_id, fake, monkeypatch, caplog
):
    from tests.platforms.shopify.fake_shopify import CLIENT_ID, CLIENT_SECRET

    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("SHOP_CLIENT_ID", CLIENT_ID)
    monkeypatch.setenv("SHOP_CLIENT_SECRET", CLIENT_SECRET)
    monkeypatch.setenv("QUARRY_SHOPIFY_WEBHOOK_URL", "https://quarry.example.com/")
    result = add_shop(
        app,
        account_id,
        "--client-id-env",
        "SHOP_CLIENT_ID",
        "--client-secret-env",
        "SHOP_CLIENT_SECRET",
        "--json",
    )
    assert result.exit_code == 0, result.output
    assert CLIENT_SECRET not in result.output and CLIENT_SECRET not in caplog.text
    assert len(fake.shop.token_requests) == 1
    with app.registry.session() as session:
        (store,) = list_stores(session, account_id)
        assert CLIENT_SECRET not in (store.connection_secret or "")
        doc = SecretBox(app.settings.fernet_keys).open(store.connection_secret)
        connector = connector_for(app.settings, store)
    assert doc == {
        "domain": "quarry-test.myshopify.com",
        "api_version": "2026-10",
        "client_id": CLIENT_ID,
        "client_secret": CLIENT_SECRET,
    }
    assert connector.count("orders") == 3  # a token of its own, obtained on first use
    subscriptions = fake.shop.webhook_subscriptions
    assert {s["uri"] for s in subscriptions} == {"https://quarry.example.com/webhooks/shopify"}
    assert {"ORDERS_UPDATED", "REFUNDS_CREATE", "CUSTOMERS_UPDATE"} <= {
        s["topic"] for s in subscriptions
    }


def test_wrong_client_secret_creates_no_store(app, account_id, monkeypatch):
    from tests.platforms.shopify.fake_shopify import CLIENT_ID

    monkeypatch.setenv("SHOP_CLIENT_ID", CLIENT_ID)
    monkeypatch.setenv("SHOP_CLIENT_SECRET", "wrong-secret")
    result = add_shop(
        app,
        account_id,
        "--client-id-env",
        "SHOP_CLIENT_ID",
        "--client-secret-env",
        "SHOP_CLIENT_SECRET",
    )
    assert isinstance(result.exception, ShopifyAuthError)
    assert "wrong-secret" not in str(result.exception)
    with app.registry.session() as session:
        assert list_stores(session, account_id) == []


def test_credentials_must_be_one_kind(app, account_id):
    result = add_shop(
        app,
        account_id,
    )
    assert isinstance(result.exception, InvalidRequest)
    assert "--client-id-env" in str(result.exception)
    both = add_shop(
        app,
        account_id,
        "--token-env",
        "SHOP_TOKEN",
        "--client-id-env",
        "SHOP_TOKEN",
    )
    assert isinstance(both.exception, InvalidRequest)
