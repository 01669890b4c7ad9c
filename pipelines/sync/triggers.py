"""Incremental syncs asked for outside Dagster's schedules: a Shopify webhook records a
pending sync in the registry (platforms.shopify.webhooks, registry.pending_syncs), and the
housekeeper submits the due ones here on every pass.

The housekeeper rather than a Dagster sensor: sensors execute in the code server, which is
the worker role, while submissions belong with the orchestrator (docs/deployment.md); and
the housekeeper already submits the export runs no run has taken, the same way.

Each run is submitted through Dagster's GraphQL API like an export run
(pipelines.exports.launcher), tagged with the store so queued runs of one store still go one
at a time, and with the pending sync's id, so a claim whose claimer died before recording
its run is matched to that run instead of being submitted twice.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta

from dagster import DagsterInstance, RunsFilter

from pipelines.exports.launcher import submit as submit_to_dagster
from pipelines.instance import store_tags
from quarry.settings import Settings
from registry.db import Registry
from registry.models import Store, utcnow
from registry.pending_syncs import DueSync, claim, due_syncs, prune_done, record_run, release

log = logging.getLogger(__name__)

SYNC_JOB_NAME = "sync_stores"
PENDING_SYNC_TAG = "quarry/pending_sync"
# A claim older than this without a run id was left by a housekeeper that died while
# submitting: far beyond the submission's own timeout (LAUNCH_TIMEOUT_SECONDS).
CLAIM_TIMEOUT = timedelta(minutes=2)
# Done requests are kept this long, for whoever wonders which run a webhook started.
KEEP_DONE = timedelta(days=1)

Submit = Callable[[Settings, str, dict[str, str]], str]


def submit_due_syncs(
    settings: Settings,
    registry: Registry,
    instance: DagsterInstance,
    now: datetime | None = None,
    submit: Submit = submit_to_dagster,
) -> list[str]:
    """Submit a `sync_stores` run for every pending sync that is due; the run ids
    submitted. A submission Dagster refuses is given back for the next pass."""
    now = now or utcnow()
    with registry.session() as session:
        due = due_syncs(session, now, stale_before=now - CLAIM_TIMEOUT)
        prune_done(session, now - KEEP_DONE)
    submitted = []
    for pending in due:
        if pending.claimed_at is not None and _found_run(registry, instance, pending):
            continue
        with registry.session() as session:
            if not claim(session, pending, now):
                continue  # another housekeeper took it
        run_id = _submit(settings, registry, pending, submit)
        with registry.session() as session:
            if run_id is None:
                release(session, pending.id, now)
            else:
                record_run(session, pending.id, run_id)
                submitted.append(run_id)
    return submitted


def _found_run(registry: Registry, instance: DagsterInstance, pending: DueSync) -> bool:
    runs = instance.get_runs(RunsFilter(tags={PENDING_SYNC_TAG: str(pending.id)}), limit=1)
    if not runs:
        return False
    with registry.session() as session:
        record_run(session, pending.id, runs[0].run_id)
    return True


def _submit(settings: Settings, registry: Registry, pending: DueSync, submit: Submit) -> str | None:
    with registry.session() as session:
        store = session.get(Store, pending.store_id)
        name = store.name if store is not None else None
    tags = {
        "dagster/partition": pending.store_id,
        "quarry/trigger": pending.reason,
        PENDING_SYNC_TAG: str(pending.id),
    } | store_tags(pending.store_id, name)
    try:
        run_id = submit(settings, SYNC_JOB_NAME, tags)
    except Exception as exc:
        # Anything from the client or its transport means "not now": the next pass retries.
        log.warning("%s sync of %s not submitted yet: %s", pending.reason, pending.store_id, exc)
        return None
    log.info("%s sync of %s submitted as run %s", pending.reason, pending.store_id, run_id)
    return run_id
