"""Resources: Quarry's settings, registry and platforms, read when a run starts.

Nothing here reads the environment at import: `Definitions` must load with no QUARRY_*
variable set (the webserver imports it), and each run reads the settings of the process it
runs in.
"""

from __future__ import annotations

from dagster import (
    ConfigurableResource,
    DagsterInstance,
    DagsterRunStatus,
    InitResourceContext,
    RunsFilter,
)
from pydantic import PrivateAttr
from sqlalchemy import select, update

from pipelines.instance import STORE_NAME_TAG, WORKER_TAG, release_abandoned_runs
from platforms.base import Connector
from platforms.connectors import connector_for
from quarry import logs
from quarry.settings import Settings, load_settings
from quarry.workers import worker_identity
from registry.accounts import get_store
from registry.db import Registry
from registry.measures import write_tally
from registry.models import Store
from warehouse.lake import Lake, shared_lake
from warehouse.modelled.exchange_rates import RatesProvider, provider

# Run tag: present with "true" on a full re-sync run (the full_resync job sets it).
FULL_TAG = "quarry/full"
# Dagster's tag of a partitioned run: the store a sync run works on.
PARTITION_TAG = "dagster/partition"


class QuarryResource(ConfigurableResource):
    """Settings, registry and connectors of this process, built on first use.

    `batch_rows`: connector pages are folded into one commit per this many parent rows;
    the cursor is saved after each commit. `rates_provider`: a name from
    warehouse.modelled.exchange_rates.PROVIDERS or a "package.module:attribute" path."""

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

    def store_label(self, store_id: str) -> str:
        """`Name (id)`: how a store is named in metadata the Dagster UI shows."""
        name = _store_name(self.registry, store_id)
        return f"{name} ({store_id})" if name is not None else store_id

    def connector(self, store: Store) -> Connector:
        """The platform connector of `store`."""
        return connector_for(self.settings, store)

    def rates(self) -> RatesProvider:
        return provider(self.rates_provider)

    def setup_for_execution(self, context: InitResourceContext) -> None:
        # In the code location's own processes (its code server, a run's worker) nothing
        # else sets up Python's logging: Quarry's loggers follow QUARRY_LOG_* there too.
        logs.configure_unconfigured(self.settings)

    def teardown_after_execution(self, context: InitResourceContext) -> None:
        if self._registry is not None:
            # What the step measured and no step end wrote (the lake's write-lock waits of
            # maintenance, say) goes to /metrics' counters before the process ends.
            write_tally(self._registry)
            self._registry.dispose()


class ResyncStatus(ConfigurableResource):
    """Keeps a store's status true to what runs: `syncing` while a full re-sync of it runs,
    `active` otherwise. Also tags a run that was launched without them (from the UI, by a
    webhook) with its worker and its store's name.

    Every run of a store sets the status when it starts, from the runs in progress: a full
    re-sync sets `syncing`; any other run sets `active` unless another full re-sync of the
    store is still running. A full re-sync sets it again when it ends. A killed run never
    ends, so each run first tags itself with its worker (quarry.workers) and fails the runs of
    dead processes (pipelines.instance.release_abandoned_runs): the next sync of the store,
    of any kind, ends the `syncing` a killed re-sync left behind."""

    _store_id: str | None = PrivateAttr(default=None)
    _full: bool = PrivateAttr(default=False)
    _run_id: str | None = PrivateAttr(default=None)

    def setup_for_execution(self, context: InitResourceContext) -> None:
        run, instance = context.dagster_run, context.instance
        store_id = run.tags.get(PARTITION_TAG) if run is not None else None
        if run is None or instance is None or not store_id:
            return
        settings = load_settings()
        registry = Registry(settings)
        try:
            tags = {}
            if WORKER_TAG not in run.tags:
                # Runs the daemon launches carry no process yet: tagged, a dead one is found
                # dead like a killed `quarry sync`.
                tags[WORKER_TAG] = worker_identity(settings.role_id)
            name = None if STORE_NAME_TAG in run.tags else _store_name(registry, store_id)
            if name is not None:
                tags[STORE_NAME_TAG] = name
            if tags:
                instance.add_run_tags(run.run_id, tags)
            release_abandoned_runs(instance, settings.role_id)
            self._store_id, self._run_id = store_id, run.run_id
            self._full = run.tags.get(FULL_TAG) == "true"
            set_store_status(registry, store_id, self._status(instance))
        finally:
            registry.dispose()

    def teardown_after_execution(self, context: InitResourceContext) -> None:
        if self._store_id and self._full and context.instance is not None:
            self._full = False
            registry = Registry(load_settings())
            try:
                set_store_status(registry, self._store_id, self._status(context.instance))
            finally:
                registry.dispose()

    def _status(self, instance: DagsterInstance) -> str:
        """`syncing` while this run, if a full re-sync, or another full re-sync of the
        store is in progress."""
        if self._full:
            return "syncing"
        running = full_resync_running(instance, self._store_id or "", besides=self._run_id or "")
        return "syncing" if running else "active"


def full_resync_running(instance: DagsterInstance, store_id: str, *, besides: str = "") -> bool:
    """Whether a full re-sync of `store_id` is starting or running (other than run
    `besides`)."""
    running = instance.get_runs(
        RunsFilter(
            statuses=[DagsterRunStatus.STARTING, DagsterRunStatus.STARTED],
            tags={FULL_TAG: "true", PARTITION_TAG: store_id},
        )
    )
    return any(r.run_id != besides for r in running)


def settle_syncing_stores(instance: DagsterInstance, registry: Registry) -> list[str]:
    """Set `active` every store shown `syncing` whose full re-sync no longer runs (one
    killed mid-run never ended it); the stores set."""
    with registry.session() as session:
        syncing = list(session.scalars(select(Store.id).where(Store.status == "syncing")))
    settled = [s for s in syncing if not full_resync_running(instance, s)]
    for store_id in settled:
        set_store_status(registry, store_id, "active")
    return settled


def set_store_status(registry: Registry, store_id: str, status: str) -> None:
    """Set a store's status; a store removed meanwhile is left alone, and one already in
    `status` is not written."""
    with registry.session() as session:
        session.execute(
            update(Store).where(Store.id == store_id, Store.status != status).values(status=status)
        )


def _store_name(registry: Registry, store_id: str) -> str | None:
    """The name of `store_id`, or None when it was removed."""
    with registry.session() as session:
        store = session.get(Store, store_id)
        return store.name if store is not None else None
