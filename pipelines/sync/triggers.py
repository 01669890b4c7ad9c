"""Incremental syncs started from outside Dagster's schedules: a Shopify webhook asks for
one, after its debounce window (platforms.shopify.webhooks).

The run is submitted through Dagster's GraphQL API like an export run
(pipelines.exports.launcher), tagged with the store so queued runs of one store still go
one at a time. Nothing is persisted: a sync lost to a restart inside the window is made up
by the hourly schedule, which stays the reconciliation.
"""

from __future__ import annotations

import logging
import threading

from pipelines.instance import store_tags
from quarry.errors import QuarryError
from quarry.settings import Settings
from registry.accounts import get_store
from registry.db import Registry

log = logging.getLogger(__name__)

SYNC_JOB_NAME = "sync_stores"


class DelayedSync:
    """SyncTrigger that submits `sync_stores` for a store after a delay (a daemon timer).
    With a registry the run is tagged with the store's name too."""

    def __init__(self, settings: Settings, registry: Registry | None = None) -> None:
        self.settings = settings
        self.registry = registry

    def _name(self, store_id: str) -> str | None:
        if self.registry is None:
            return None
        try:
            with self.registry.session() as session:
                return get_store(session, store_id).name
        except QuarryError:  # removed meanwhile: the run fails and says so
            return None

    def schedule(self, store_id: str, delay_seconds: float) -> None:
        timer = threading.Timer(delay_seconds, self._submit, args=(store_id,))
        timer.daemon = True
        timer.start()

    def _submit(self, store_id: str) -> None:
        from pipelines.exports.launcher import submit

        try:
            run_id = submit(
                self.settings,
                SYNC_JOB_NAME,
                {"dagster/partition": store_id, "quarry/trigger": "webhook"}
                | store_tags(store_id, self._name(store_id)),
            )
            log.info("webhook sync of %s submitted as run %s", store_id, run_id)
        except Exception as exc:
            # Dagster down or the location not loaded: the hourly sync catches up.
            log.warning("webhook sync of %s not submitted: %s", store_id, exc)
