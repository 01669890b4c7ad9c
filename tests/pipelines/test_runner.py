"""What the CLI's in-process runs leave behind when their process is killed."""

from __future__ import annotations

from dagster import DagsterInstance, DagsterRun, DagsterRunStatus

from pipelines.runner import WORKER_TAG, release_abandoned_runs, step_asset
from quarry.workers import worker_identity
from tests.factories import dead_pid


def test_runs_of_a_killed_sync_are_failed_and_their_pool_slots_freed(
    instance: DagsterInstance,
) -> None:
    dead = DagsterRun(
        job_name="sync_stores",
        status=DagsterRunStatus.STARTED,
        tags={WORKER_TAG: worker_identity("here", dead_pid())},
    )
    alive = DagsterRun(
        job_name="sync_stores",
        status=DagsterRunStatus.STARTED,
        tags={WORKER_TAG: worker_identity("here", 1)},
    )
    # Another role's process cannot be looked at from here: its run is left alone.
    elsewhere = DagsterRun(
        job_name="sync_stores",
        status=DagsterRunStatus.STARTED,
        tags={WORKER_TAG: worker_identity("there", dead_pid())},
    )
    for run in (dead, alive, elsewhere):
        instance.add_run(run)
    storage = instance.event_log_storage
    storage.initialize_concurrency_limit_to_default("warehouse_orders")
    assert storage.claim_concurrency_slot("warehouse_orders", dead.run_id, "sync_orders").is_claimed

    assert release_abandoned_runs(instance, "here") == [dead.run_id]

    assert instance.get_run_by_id(dead.run_id).status == DagsterRunStatus.FAILURE  # type: ignore[union-attr]
    for kept in (alive, elsewhere):
        assert instance.get_run_by_id(kept.run_id).status == DagsterRunStatus.STARTED  # type: ignore[union-attr]
    assert storage.get_concurrency_info("warehouse_orders").active_slot_count == 0


def test_steps_are_named_as_users_know_them() -> None:
    assert step_asset("sync_orders") == "orders"
    assert step_asset("check_sales") == "checks of sales"
    assert step_asset("warehouse_snapshot") == "warehouse_snapshot"
    assert step_asset(None) == "run"
