"""Which connector serves a store, by the store's platform kind."""

from __future__ import annotations

from platforms.base import Connector
from quarry.errors import ConfigurationError
from quarry.settings import Settings
from registry.models import Store


def connector_for(settings: Settings, store: Store) -> Connector:
    """The connector that reads `store` from its platform."""
    if store.platform == "demo":
        from platforms.demo.connector import DemoConnector

        return DemoConnector(settings, store.account_id, store.id)
    if store.platform == "shopify":
        from platforms.shopify.connector import ShopifyConnector

        return ShopifyConnector.for_store(settings, store)
    raise ConfigurationError(f"store {store.id}: unknown platform {store.platform!r}")


def forget_store(settings: Settings, platform: str, store_id: str) -> None:
    """Remove what the platform keeps locally for a removed store (the demo's files)."""
    if platform == "demo":
        from platforms.demo.storage import delete_store_files

        delete_store_files(settings, store_id)
