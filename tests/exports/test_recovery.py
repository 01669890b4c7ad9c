"""Nothing lost, nothing stuck: the reconciler finds accepted jobs no run has taken, the
reaper fails jobs whose worker died or whose run ended without a result."""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import timedelta

import pytest
from dagster import DagsterInstance

from pipelines.exports.jobs import export
from pipelines.exports.reaper import reap
from pipelines.exports.reconciler import GRACE, unlaunched_jobs
from pipelines.exports.runs import latest_run, run_tags
from quarry.files import TEMPORARY_MARK, export_files
from quarry.settings import load_settings
from registry.models import ExportJob, utcnow
from tests.api.world import World
from tests.exports.conftest import apply_yaml, new_job
from tests.factories import dead_pid


@pytest.fixture
def instance() -> Iterator[DagsterInstance]:
    with DagsterInstance.ephemeral() as ephemeral:
        yield ephemeral


@pytest.fixture(scope="module")
def config_id(export_world: World) -> str:
    document = {"exports": [{"name": "Recovery", "entity_type": "orders", "format": "csv"}]}
    return apply_yaml(export_world, "a", document)["Recovery"]


def row(world: World, job_id: str) -> ExportJob:
    with world.registry.session() as session:
        found = session.get(ExportJob, job_id)
        assert found is not None
        return found


def test_reconciler_lists_old_unlaunched_jobs_and_records_found_runs(
    export_world: World, config_id: str, instance: DagsterInstance
) -> None:
    old = utcnow() - GRACE - timedelta(seconds=1)
    waiting = new_job(export_world, config_id, created_at=old)
    young = new_job(export_world, config_id)
    launched = new_job(export_world, config_id, created_at=old)
    run = instance.create_run_for_job(export, tags=run_tags(launched, "Recovery"))
    found = {w.job_id for w in unlaunched_jobs(export_world.registry, instance)}
    assert waiting in found and young not in found and launched not in found
    assert row(export_world, launched).dagster_run_id == run.run_id


def test_reaper_fails_dead_and_silent_workers(
    export_world: World, config_id: str, instance: DagsterInstance
) -> None:
    settings = load_settings(role_id="orchestrator-1", heartbeat_timeout_seconds=30)
    stale = timedelta(seconds=30)
    now = utcnow()
    dead = new_job(
        export_world, config_id, status="running", worker=f"orchestrator-1:{dead_pid()}",
        started_at=now, heartbeat_at=now,
    )  # fmt: skip
    silent = new_job(
        export_world, config_id, status="running", worker="worker-2:1",
        started_at=now - stale * 2, heartbeat_at=now - stale - timedelta(seconds=5),
    )  # fmt: skip
    alive = new_job(
        export_world, config_id, status="running", worker=f"orchestrator-1:{os.getpid()}",
        started_at=now, heartbeat_at=now,
    )  # fmt: skip
    # Another role's process numbers mean nothing here, even a dead one's: only its
    # heartbeat says whether it is gone.
    elsewhere = new_job(
        export_world, config_id, status="running", worker=f"worker-2:{dead_pid()}",
        started_at=now, heartbeat_at=now - stale + timedelta(seconds=5),
    )  # fmt: skip
    leftovers = export_files(settings)
    leftovers.put_bytes(f"{silent}/export.csv{TEMPORARY_MARK}run", b"half")
    leftovers.put_bytes(f"{silent}/tmpabc123", b"xlsxwriter's")
    reaped = reap(settings, export_world.registry, instance, now)
    assert dead in reaped and silent in reaped
    assert alive not in reaped and elsewhere not in reaped
    assert leftovers.keys(silent) == []
    assert "stopped mid-run" in (row(export_world, dead).error or "")
    assert "no heartbeat" in (row(export_world, silent).error or "")
    assert row(export_world, dead).status == "failed"
    assert row(export_world, alive).status == "running"


def test_reaper_fails_jobs_whose_run_ended_without_them(
    export_world: World, config_id: str, instance: DagsterInstance
) -> None:
    job_id = new_job(export_world, config_id)
    run = instance.create_run_for_job(export, tags=run_tags(job_id, "Recovery"))
    instance.report_run_failed(run, "the code location could not load")
    with export_world.registry.session() as session:
        session.get(ExportJob, job_id).dagster_run_id = run.run_id  # type: ignore[union-attr]
    assert latest_run(instance, job_id).status == "FAILURE"  # type: ignore[union-attr]
    assert job_id in reap(load_settings(), export_world.registry, instance)
    assert row(export_world, job_id).status == "failed"
    assert "could not load" in (row(export_world, job_id).error or "")


def test_reaper_fails_a_queued_job_whose_run_died_before_claiming_it(
    export_world: World, config_id: str, instance: DagsterInstance
) -> None:
    from dagster import DagsterEvent, DagsterEventType

    settings = load_settings(heartbeat_timeout_seconds=30)
    job_id = new_job(export_world, config_id)
    run = instance.create_run_for_job(export, tags=run_tags(job_id, "Recovery"))
    start = DagsterEvent(DagsterEventType.RUN_START.value, job_name=run.job_name)
    instance.report_dagster_event(start, run.run_id)
    with export_world.registry.session() as session:
        session.get(ExportJob, job_id).dagster_run_id = run.run_id  # type: ignore[union-attr]
    # Within the timeout the run may still be about to claim its job.
    assert job_id not in reap(settings, export_world.registry, instance)
    later = utcnow() + timedelta(seconds=31)
    assert job_id in reap(settings, export_world.registry, instance, later)
    failed = row(export_world, job_id)
    assert failed.status == "failed" and "never began the export" in (failed.error or "")
    assert instance.get_run_by_id(run.run_id).status.value == "FAILURE"  # type: ignore[union-attr]
