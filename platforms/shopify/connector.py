"""ShopifyConnector: platforms.base.Connector for a store on Shopify's Admin GraphQL API.

changes(dataset, None) runs a backfill through bulk operations (platforms.shopify.backfill)
and its last page hands over to incremental syncs (platforms.shopify.incremental); any
other cursor continues where it says. count(dataset) asks Shopify for the current count.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime

from platforms.shopify.auth import shared_tokens
from platforms.shopify.backfill import backfill_pages, start_cursor
from platforms.shopify.client import ShopifyClient
from platforms.shopify.cursor import BackfillCursor, decode
from platforms.shopify.incremental import incremental_pages
from platforms.shopify.job import SyncJob, utcnow
from platforms.shopify.mapping import MappingContext
from platforms.shopify.probe import changed_datasets
from platforms.shopify.queries import DATASETS, DatasetQueries
from platforms.shopify.settings import ShopConnection, ShopifySettings, load_shopify_settings
from platforms.shopify.throttle import CostBucket
from quarry.crypto import SecretBox
from quarry.errors import InvalidRequest
from quarry.settings import Settings
from registry.models import Store
from warehouse.pages import ChangePage


class ShopifyConnector:
    """One store seen through the Admin GraphQL API."""

    def __init__(
        self,
        store_id: str,
        connection: ShopConnection,
        currency: str,
        settings: ShopifySettings,
        *,
        now: Callable[[], datetime] = utcnow,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store_id = store_id
        self.connection = connection
        self.currency = currency
        self.settings = settings
        self._now = now
        self._sleep = sleep
        self._clock = clock
        self._bucket = CostBucket(share=settings.bucket_share, clock=clock)
        # Clients of this connector, and of the process's other connectors of the same app
        # and shop, share one client-credentials token.
        self.tokens = shared_tokens(connection, settings, clock=clock)

    @classmethod
    def for_store(cls, settings: Settings, store: Store) -> ShopifyConnector:
        """The connector of registry row `store`, its connection decrypted now."""
        shopify = load_shopify_settings()
        connection = ShopConnection.open(
            SecretBox(settings.fernet_keys), store.connection_secret, shopify.api_version
        )
        return cls(store.id, connection, store.currency, shopify)

    def client(self) -> ShopifyClient:
        return ShopifyClient(
            self.connection,
            self.settings,
            sleep=self._sleep,
            clock=self._clock,
            bucket=self._bucket,
            tokens=self.tokens,
        )

    def changes(self, dataset: str, cursor: str | None) -> Iterator[ChangePage]:
        queries = _queries(dataset)
        with self.client() as client:
            job = SyncJob(
                client=client,
                queries=queries,
                mapping=MappingContext(self.store_id, self.currency),
                settings=self.settings,
                now=self._now,
                sleep=self._sleep,
                clock=self._clock,
            )
            state = decode(cursor) if cursor else start_cursor(job)
            if isinstance(state, BackfillCursor):
                yield from backfill_pages(job, state)
            else:
                yield from incremental_pages(job, state)

    def changed(self, cursors: Mapping[str, str | None]) -> list[str]:
        with self.client() as client:
            return changed_datasets(client, cursors, self.settings.lookback_seconds)

    def count(self, dataset: str) -> int:
        queries = _queries(dataset)
        with self.client() as client:
            data = client.query(queries.count_query())
        return int(data[queries.count_field]["count"])


def _queries(dataset: str) -> DatasetQueries:
    try:
        return DATASETS[dataset]
    except KeyError:
        raise InvalidRequest(
            f"dataset {dataset!r} is not served by Shopify; one of {', '.join(DATASETS)}"
        ) from None
