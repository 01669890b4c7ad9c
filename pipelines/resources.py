"""Resources: Quarry's settings, registry and platforms, read when a run starts.

Nothing here reads the environment at import: `Definitions` must load with no QUARRY_*
variable set (the webserver imports it), and each run reads the settings of the process it
runs in.
"""

from __future__ import annotations

from dagster import ConfigurableResource, InitResourceContext
from pydantic import PrivateAttr

from platforms.base import Connector
from platforms.registry import connector_for
from quarry.settings import Settings, load_settings
from registry.accounts import get_store
from registry.db import Registry
from registry.models import Store
from warehouse.lake import Lake, shared_lake
from warehouse.models.exchange_rates import RatesProvider, provider

# Run tag: present with "true" on a full re-sync run (the full_resync job sets it).
FULL_TAG = "quarry/full"


class QuarryResource(ConfigurableResource):
    """Settings, registry and connectors of this process, built on first use.

    `batch_rows`: connector pages are folded into one commit per this many parent rows;
    the cursor is saved after each commit. `rates_provider`: a name from
    warehouse.models.exchange_rates.PROVIDERS or a "package.module:attribute" path."""

    batch_rows: int = 50_000
    rates_provider: str = "demo"

    _settings: Settings | None = PrivateAttr(default=None)
    _registry: Registry | None = PrivateAttr(default=None)

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            self._settings = load_settings()
        return self._settings

    @property
    def registry(self) -> Registry:
        if self._registry is None:
            self._registry = Registry(self.settings)
        return self._registry

    @property
    def lake(self) -> Lake:
        """The warehouse: the process's shared connection (warehouse.lake.shared_lake)."""
        return shared_lake(self.settings)

    def store(self, store_id: str) -> Store:
        """The registry row of `store_id` (NotFound when it was removed)."""
        with self.registry.session() as session:
            return get_store(session, store_id)

    def connector(self, store: Store) -> Connector:
        """The platform connector of `store`."""
        return connector_for(self.settings, store)

    def rates(self) -> RatesProvider:
        return provider(self.rates_provider)

    def teardown_after_execution(self, context: InitResourceContext) -> None:
        if self._registry is not None:
            self._registry.dispose()


class ResyncStatus(ConfigurableResource):
    """Marks the run's store `syncing` for the whole of a full re-sync and `active` when
    the run ends, however it ends.

    Sync jobs run on the in-process executor, which builds resources once per run: setup
    and teardown bracket the run exactly. Incremental runs leave the status alone."""

    _store_id: str | None = PrivateAttr(default=None)

    def setup_for_execution(self, context: InitResourceContext) -> None:
        run = context.dagster_run
        if run is None or run.tags.get(FULL_TAG) != "true":
            return
        self._store_id = run.tags.get("dagster/partition")
        if self._store_id:
            set_store_status(self._store_id, "syncing")

    def teardown_after_execution(self, context: InitResourceContext) -> None:
        if self._store_id:
            set_store_status(self._store_id, "active")


def set_store_status(store_id: str, status: str) -> None:
    """Set a store's status; a store removed meanwhile is left alone."""
    registry = Registry(load_settings())
    try:
        with registry.session() as session:
            store = session.get(Store, store_id)
            if store is not None:
                store.status = status
    finally:
        registry.dispose()
