"""Access tokens of Dev Dashboard apps: obtained with the client-credentials grant, renewed
before they expire and once when Shopify answers 401; static tokens still work."""

from __future__ import annotations

import time

import pytest

from platforms.shopify.connector import ShopifyConnector
from platforms.shopify.errors import ShopifyAuthError
from platforms.shopify.settings import ShopConnection
from tests.platforms.shopify.conftest import DOMAIN, STORE_ID, expected, fast_settings, rows
from tests.platforms.shopify.fake_shopify import CLIENT_ID, CLIENT_SECRET


def connector(fake, *, secret: str = CLIENT_SECRET, **overrides) -> ShopifyConnector:
    connection = ShopConnection(DOMAIN, None, "2026-10", client_id=CLIENT_ID, client_secret=secret)
    return ShopifyConnector(STORE_ID, connection, "EUR", fast_settings(fake, **overrides))


def test_a_token_is_obtained_with_the_client_credentials(fake):
    pages = list(connector(fake).changes("customers", None))

    assert rows(pages, "customers") == expected("customers")
    (request,) = fake.shop.token_requests
    assert request == {
        "grant_type": "client_credentials",
        "client_id": CLIENT_ID,
        "client_secret": CLIENT_SECRET,
    }


def test_clients_of_one_connector_share_the_token(fake):
    shop = connector(fake)
    list(shop.changes("customers", None))
    shop.count("orders")
    assert len(fake.shop.token_requests) == 1


def test_the_token_is_renewed_before_it_expires(fake):
    # Tokens live 1.5 s; renewing 1 s early leaves each one 0.5 s of use.
    fake.shop.token_lifetime = 1.5
    shop = connector(fake, token_refresh_margin_seconds=1.0)
    assert shop.count("orders") == 3
    time.sleep(0.6)
    assert shop.count("orders") == 3

    assert len(fake.shop.token_requests) == 2
    # No query ever went out with an expired token: none was refused.
    assert all("injected" not in e for e in fake.shop.log)


def test_a_refused_token_is_renewed_once(fake):
    shop = connector(fake)
    assert shop.count("orders") == 3
    fake.shop.revoke_tokens()  # e.g. the app's secret was rotated

    assert shop.count("orders") == 3
    assert len(fake.shop.token_requests) == 2


def test_refused_client_credentials_are_reported_without_the_secret(fake):
    with pytest.raises(ShopifyAuthError, match="client credentials") as caught:
        connector(fake, secret="not-the-secret").count("orders")
    assert "not-the-secret" not in str(caught.value)


def test_the_connection_repr_hides_the_secret():
    connection = ShopConnection(DOMAIN, None, "2026-10", client_id=CLIENT_ID, client_secret="s3")
    assert "s3" not in repr(connection) and CLIENT_ID not in repr(connection)
    assert "client_credentials" in repr(connection)


def test_connectors_of_one_process_share_the_token(fake):
    first, second = connector(fake), connector(fake)
    assert first.count("orders") == second.count("orders") == 3
    assert len(fake.shop.token_requests) == 1
