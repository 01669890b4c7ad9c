"""A Shopify webhook's debounced sync, as the API asks for it (a pending sync in the
registry): the orchestrator's housekeeper submits a `sync_stores` run of the store to the
stack's real Dagster webserver, once, and it succeeds. (The webhook route and the claim:
tests/api/test_shopify_webhooks.py, tests/pipelines/test_triggers.py.)"""

from __future__ import annotations

import pytest
from dagster import DagsterRunStatus, RunsFilter

from pipelines.instance import open_instance
from registry.models import utcnow
from registry.pending_syncs import open_syncs, request_sync
from tests.api.conftest import isolated_env
from tests.exports.conftest import Stack, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("exports-end-to-end")]


def test_a_webhook_sync_runs_in_dagster(stack: Stack) -> None:
    stack.start_dagster()
    store_id = stack.store_ids[0]
    with stack.registry.session() as session:
        assert request_sync(session, store_id, "webhook", utcnow())

    with isolated_env(str(stack.settings.home)), open_instance(stack.settings) as instance:
        webhook_runs = RunsFilter(tags={"quarry/trigger": "webhook"})
        run = wait_for(
            lambda: next(iter(instance.get_runs(filters=webhook_runs)), None),
            "the webhook sync run",
            timeout=120,
        )
        assert run.job_name == "sync_stores"
        assert run.tags["dagster/partition"] == store_id
        assert run.tags["quarry/store"] == store_id
        finished = wait_for(
            lambda: (r := instance.get_run_by_id(run.run_id)) and r.is_finished and r,
            "the webhook sync run to finish",
            timeout=300,
        )
        assert finished.status == DagsterRunStatus.SUCCESS
        assert len(instance.get_runs(filters=webhook_runs)) == 1
    with stack.registry.session() as session:
        assert open_syncs(session, store_id) == []
