"""The export job and the export sensors against a real Dagster instance, in process."""

from __future__ import annotations

from datetime import timedelta

import pytest
from dagster import DagsterInstance, SensorResult, build_sensor_context
from sqlalchemy import select

from exports.configs.saved import set_schedule_paused
from exports.jobs.lifecycle import create_job
from pipelines.definitions import defs
from pipelines.exports.runs import CONFIG_TAG, JOB_TAG, latest_run, run_tags
from pipelines.exports.sensors import scheduled_exports
from pipelines.resources import QuarryResource
from pipelines.runner import QUIET
from registry.db import Registry
from registry.models import ExportConfig, ExportJob, utcnow


def queue(registry: Registry, account: str, name: str, **values: object) -> str:
    with registry.session() as session:
        config = session.scalars(
            select(ExportConfig).where(
                ExportConfig.account_id == account, ExportConfig.name == name
            )
        ).one()
        job, _ = create_job(session, config)
        for field, value in values.items():
            setattr(job, field, value)
        return job.id


def execute(instance: DagsterInstance, job_id: str, name: str) -> str:
    result = defs.resolve_job_def("export").execute_in_process(
        run_config=QUIET,
        instance=instance,
        tags=run_tags(job_id, name),
        resources={"quarry": QuarryResource()},
        raise_on_error=False,
    )
    return result.run_id


def test_a_run_executes_its_job(
    instance: DagsterInstance, registry: Registry, demo_account: str
) -> None:
    job_id = queue(registry, demo_account, "Orders (CSV)")
    run_id = execute(instance, job_id, "Orders (CSV)")
    with registry.session() as session:
        job = session.get(ExportJob, job_id)
        assert job is not None and job.status == "completed", job.error
        assert job.dagster_run_id == run_id and job.file_name and job.file_path
    run = latest_run(instance, job_id)
    assert run is not None and run.run_id == run_id and run.status == "SUCCESS"
    tags = instance.get_run_by_id(run_id).tags  # type: ignore[union-attr]
    assert tags[JOB_TAG] == job_id and tags[CONFIG_TAG] == "Orders (CSV)"


def test_a_failed_export_fails_its_run_with_the_same_reason(
    instance: DagsterInstance, registry: Registry, demo_account: str
) -> None:
    job_id = queue(registry, demo_account, "Live orders sheet")
    run_id = execute(instance, job_id, "Live orders sheet")
    with registry.session() as session:
        job = session.get(ExportJob, job_id)
        assert job is not None and job.status == "failed"
        assert "QUARRY_DEMO_GOOGLE_SERVICE_ACCOUNT" in (job.error or "")
    run = latest_run(instance, job_id)
    assert run is not None and run.run_id == run_id and run.status == "FAILURE"
    assert run.failure == job.error
    # A second run of the same job does not execute it again.
    execute(instance, job_id, "Live orders sheet")
    assert "not waiting for a run" in (latest_run(instance, job_id).failure or "")  # type: ignore[union-attr]


def test_scheduled_exports_request_one_run_per_configuration_and_tick(
    instance: DagsterInstance, registry: Registry, demo_account: str
) -> None:
    cursor = (utcnow() - timedelta(days=1, hours=1)).isoformat()
    results = []
    for _ in range(2):  # the same tick evaluated twice: the same jobs and run keys
        with build_sensor_context(
            instance=instance, cursor=cursor, resources={"quarry": QuarryResource()}
        ) as context:
            result = scheduled_exports(context)
        assert isinstance(result, SensorResult)
        results.append(result.run_requests or [])
    with registry.session() as session:
        scheduled = {
            c.id: c.name
            for c in session.scalars(
                select(ExportConfig).where(
                    ExportConfig.schedule_cron.is_not(None),
                    ExportConfig.schedule_paused.is_(False),
                )
            )
        }
    first, second = results
    assert {r.run_key.split(":")[0] for r in first} == set(scheduled)  # type: ignore[union-attr]
    assert [(r.run_key, r.tags[JOB_TAG]) for r in first] == [
        (r.run_key, r.tags[JOB_TAG]) for r in second
    ]
    assert all(r.tags[CONFIG_TAG] == scheduled[r.run_key.split(":")[0]] for r in first)  # type: ignore[union-attr]


def test_a_paused_schedule_is_skipped_and_named_in_the_tick_log(
    instance: DagsterInstance,
    registry: Registry,
    demo_account: str,
    capfd: pytest.CaptureFixture[str],
) -> None:
    with registry.session() as session:
        paused = session.scalars(
            select(ExportConfig).where(
                ExportConfig.account_id == demo_account,
                ExportConfig.name == "Paid orders, daily (CSV)",
            )
        ).first()
        assert paused is not None
        paused_id, paused_name = paused.id, paused.name
        set_schedule_paused(session, paused_id, True)
    try:
        cursor = (utcnow() - timedelta(days=1, hours=1)).isoformat()
        with build_sensor_context(
            instance=instance, cursor=cursor, resources={"quarry": QuarryResource()}
        ) as context:
            result = scheduled_exports(context)
        assert isinstance(result, SensorResult)
        requested = {r.run_key.split(":")[0] for r in result.run_requests or []}  # type: ignore[union-attr]
        assert paused_id not in requested
        # The sensor's log (context.log), what the tick's log in the Dagster UI shows.
        logged = capfd.readouterr().err
        assert "paused (not run on schedule): Live orders sheet, Paid orders, daily (CSV)" in logged
        assert f"{paused_name} at " in logged.split("skipped paused ticks: ")[1]
        # The next tick, nothing due and nothing paused or resumed since: no log line (it
        # would print every 30 s in the daemon's console), the names in its skip reason.
        with build_sensor_context(
            instance=instance, cursor=result.cursor, resources={"quarry": QuarryResource()}
        ) as context:
            quiet = scheduled_exports(context)
        assert isinstance(quiet, SensorResult) and not quiet.run_requests
        assert "paused" not in capfd.readouterr().err
        assert quiet.skip_reason is not None and quiet.skip_reason.skip_message == (
            "no export due; paused: Live orders sheet, Paid orders, daily (CSV)"
        )
        # A resume is logged once, at the next tick.
        with registry.session() as session:
            set_schedule_paused(session, paused_id, False)
        with build_sensor_context(
            instance=instance, cursor=quiet.cursor, resources={"quarry": QuarryResource()}
        ) as context:
            scheduled_exports(context)
        assert "paused (not run on schedule): Live orders sheet\n" in capfd.readouterr().err
    finally:
        with registry.session() as session:
            set_schedule_paused(session, paused_id, False)
    # A paused export still runs by hand.
    with registry.session() as session:
        set_schedule_paused(session, paused_id, True)
    try:
        job_id = queue(registry, demo_account, paused_name)
        execute(instance, job_id, paused_name)
        with registry.session() as session:
            job = session.get(ExportJob, job_id)
            assert job is not None and job.status in ("completed", "failed")
            assert "not waiting" not in (job.error or "")
    finally:
        with registry.session() as session:
            set_schedule_paused(session, paused_id, False)


def test_the_demo_live_sheet_starts_paused(registry: Registry, demo_account: str) -> None:
    # It cannot succeed without a Google credential: a stock demo must not alert hourly.
    with registry.session() as session:
        by_name = {
            c.name: c
            for c in session.scalars(
                select(ExportConfig).where(ExportConfig.account_id == demo_account)
            )
        }
        assert by_name["Live orders sheet"].schedule_paused is True
        assert by_name["Paid orders, daily (CSV)"].schedule_paused is False
