"""Fixtures for the Shopify connector: a fake shop on loopback and connectors pointed at it."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from platforms.shopify.connector import ShopifyConnector
from platforms.shopify.settings import ShopConnection, ShopifySettings
from tests.platforms.shopify.fake_shopify import TOKEN, FakeShopify, FakeShopifyServer
from warehouse.pages import ChangePage

STORE_ID = "st_testshop01"
DOMAIN = "quarry-test.myshopify.com"
EXPECTED = json.loads((Path(__file__).parent / "fixtures" / "expected.json").read_text())


@pytest.fixture
def fake() -> Iterator[FakeShopifyServer]:
    with FakeShopifyServer(FakeShopify()) as server:
        yield server


def fast_settings(fake: FakeShopifyServer, **overrides: Any) -> ShopifySettings:
    """Settings pointed at the fake, with waits short enough for tests."""
    values: dict[str, Any] = {
        "base_url": fake.url,
        "bulk_poll_seconds": 0.01,
        "backoff_seconds": 0.01,
        "backoff_max_seconds": 0.05,
        "min_window_seconds": 3600,
        "max_attempts": 8,
    }
    values.update(overrides)
    return ShopifySettings(**values)


@pytest.fixture
def make_connector(fake: FakeShopifyServer) -> Callable[..., ShopifyConnector]:
    def make(
        *,
        now: Callable[[], datetime] | None = None,
        api_version: str = "2025-10",
        **overrides: Any,
    ) -> ShopifyConnector:
        connection = ShopConnection(DOMAIN, TOKEN, api_version)
        settings = fast_settings(fake, **overrides)
        if now is None:
            return ShopifyConnector(STORE_ID, connection, "EUR", settings)
        return ShopifyConnector(STORE_ID, connection, "EUR", settings, now=now)

    return make


def plain(value: Any) -> Any:
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%dT%H:%M:%SZ")
    return value


def rows(pages: list[ChangePage], table: str) -> list[dict[str, Any]]:
    """Every row of `table` across `pages`, JSON-like, ordered by id."""
    out = [
        {k: plain(v) for k, v in row.items()}
        for page in pages
        if table in page.tables
        for row in page.tables[table].to_pylist()
    ]
    return sorted(out, key=lambda r: r["id"])


def expected(table: str) -> list[dict[str, Any]]:
    return sorted(EXPECTED[table], key=lambda r: r["id"])
