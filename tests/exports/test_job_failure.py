"""A failed export job alerts the operators once, whoever fails it: its own run or the
reaper (exports/jobs/failure.py), through aiosmtpd and a webhook receiver."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from dagster import DagsterInstance
from sqlalchemy import delete

from destinations.alerts import ALERT_RETRY
from exports.jobs.execute import ExportFailed, execute_job
from exports.jobs.failure import fail_job, report_job_success
from exports.jobs.lifecycle import COMPLETED, finish
from pipelines.exports.reaper import reap
from quarry.settings import Settings
from registry.models import AlertState, ExportJob, utcnow
from tests.api.world import World
from tests.destinations.servers import AlertChannels
from tests.exports.conftest import apply_yaml, new_job
from tests.factories import dead_pid, free_port

NAME = "Alerting orders"
# Delivery fails at once: the password's variable is not set where the run executes.
UNDELIVERABLE = {
    "kind": "email",
    "settings": {
        "host": "mail.quarry.invalid",
        "from_address": "exports@example.com",
        "to": ["buyer@example.com"],
    },
    "credentials": {"username": "exports", "password": {"env": "ALERT_TEST_SMTP_PASSWORD"}},
}


@pytest.fixture(scope="module")
def config_id(export_world: World) -> str:
    document = {
        "exports": [
            {"name": NAME, "entity_type": "orders", "format": "csv", "destination": UNDELIVERABLE}
        ]
    }
    return apply_yaml(export_world, "a", document)[NAME]


@pytest.fixture
def alerting(export_world: World, alert_channels: AlertChannels) -> Settings:
    # Each test starts with no failure series open (destinations.alert_groups).
    with export_world.registry.session() as session:
        session.execute(delete(AlertState))
    return export_world.settings.model_copy(
        update={
            **alert_channels.settings,
            "role_id": "orchestrator-1",
            "public_url": "https://quarry.example.com/",
            "dagster_url": "https://dagster.example.com",
        }
    )


@pytest.fixture
def instance() -> Iterator[DagsterInstance]:
    with DagsterInstance.ephemeral() as ephemeral:
        yield ephemeral


def test_a_failed_export_job_alerts_once(
    export_world: World,
    config_id: str,
    alerting: Settings,
    alert_channels: AlertChannels,
    instance: DagsterInstance,
) -> None:
    job_id = new_job(export_world, config_id)
    with pytest.raises(ExportFailed) as failed:
        execute_job(alerting, export_world.registry, job_id, f"run-{job_id}", environ={})
    assert "ALERT_TEST_SMTP_PASSWORD" in failed.value.reason

    [message] = alert_channels.emails()
    [post] = alert_channels.webhook.posts
    assert message["Subject"] == f"Quarry: export {NAME} job {job_id} failed"
    lines = message.get_content().splitlines()
    assert post["text"].splitlines() == lines
    account = export_world.accounts["a"]
    assert f"Account: Account A ({account})" in lines
    assert f"Reason: {failed.value.reason}" in lines
    assert any(line.startswith("When: ") and line.endswith(" UTC") for line in lines)
    assert any(line.startswith("Host: ") for line in lines)
    # Links to the job in the API and to its run in the Dagster UI.
    assert f"Job: https://quarry.example.com/v1/export-jobs/{job_id}" in lines
    assert f"Dagster run: https://dagster.example.com/runs/run-{job_id}" in lines

    # The reaper, or a second writer, finds the job ended: nothing is recorded or sent again.
    assert fail_job(alerting, export_world.registry, job_id, "too late") is None
    assert job_id not in reap(alerting, export_world.registry, instance)
    with export_world.registry.session() as session:
        assert session.get(ExportJob, job_id).error == failed.value.reason  # type: ignore[union-attr]
    assert len(alert_channels.emails()) == 1 and len(alert_channels.webhook.posts) == 1


def test_a_job_the_reaper_fails_alerts_once(
    export_world: World,
    config_id: str,
    alerting: Settings,
    alert_channels: AlertChannels,
    instance: DagsterInstance,
) -> None:
    now = utcnow()
    job_id = new_job(
        export_world, config_id, status="running", worker=f"orchestrator-1:{dead_pid()}",
        started_at=now, heartbeat_at=now,
    )  # fmt: skip
    assert job_id in reap(alerting, export_world.registry, instance, now)
    [message] = alert_channels.emails()
    assert message["Subject"] == f"Quarry: export {NAME} job {job_id} failed"
    assert "stopped mid-run" in message.get_content()
    [post] = alert_channels.webhook.posts
    assert "stopped mid-run" in post["text"]
    assert job_id not in reap(alerting, export_world.registry, instance, now + timedelta(hours=1))
    assert len(alert_channels.emails()) == 1 and len(alert_channels.webhook.posts) == 1


def test_a_failed_job_without_alerts_sends_nothing(
    export_world: World, config_id: str, alert_channels: AlertChannels
) -> None:
    job_id = new_job(export_world, config_id)
    with pytest.raises(ExportFailed):
        execute_job(export_world.settings, export_world.registry, job_id, "run-x", environ={})
    assert alert_channels.emails() == [] and alert_channels.webhook.posts == []


def test_a_webhook_answering_500_and_smtp_down_do_not_hide_the_failure(
    export_world: World, config_id: str, alerting: Settings, alert_channels: AlertChannels
) -> None:
    alert_channels.webhook.status = 500
    broken = alerting.model_copy(update={"alert_smtp_url": f"smtp://127.0.0.1:{free_port()}"})
    job_id = new_job(export_world, config_id)
    with pytest.raises(ExportFailed) as failed:
        execute_job(broken, export_world.registry, job_id, f"run-{job_id}", environ={})
    assert "ALERT_TEST_SMTP_PASSWORD" in failed.value.reason
    with export_world.registry.session() as session:
        job = session.get(ExportJob, job_id)
        assert job is not None and job.status == "failed" and job.error == failed.value.reason
    assert len(alert_channels.webhook.posts) == ALERT_RETRY.attempts


def test_repeated_failures_alert_once_then_remind_with_a_count_then_recover(
    export_world: World, config_id: str, alerting: Settings, alert_channels: AlertChannels
) -> None:
    registry = export_world.registry
    start = utcnow()
    failures = [new_job(export_world, config_id) for _ in range(4)]
    # Every 5 minutes against a dead server: one alert, nothing for the next two.
    for n, job_id in enumerate(failures[:3]):
        fail_job(alerting, registry, job_id, "sftp: connection refused",
                 now=start + timedelta(minutes=5 * n))  # fmt: skip
    assert len(alert_channels.webhook.posts) == 1
    # QUARRY_ALERT_REPEAT_MINUTES (60) after the first alert: a reminder with the count.
    fail_job(alerting, registry, failures[3], "sftp: connection refused",
             now=start + timedelta(minutes=61))  # fmt: skip
    first, reminder = alert_channels.webhook.posts
    assert first["text"].startswith(f"Quarry: export {NAME} job {failures[0]} failed.")
    lines = reminder["text"].splitlines()
    assert lines[0] == f"Quarry: export {NAME} job {failures[3]} still failing (4 failures)."
    assert any(line.startswith("Failures: 4 since ") for line in lines)
    assert f"Job: https://quarry.example.com/v1/export-jobs/{failures[3]}" in lines
    # It succeeds again: one "recovered" alert, then nothing more for further successes.
    succeeded = [new_job(export_world, config_id) for _ in range(2)]
    for done in succeeded:
        with registry.session() as session:
            finish(session, done, COMPLETED)
        report_job_success(alerting, registry, done)
    assert len(alert_channels.webhook.posts) == 3
    recovered = alert_channels.webhook.posts[2]["text"].splitlines()
    assert recovered[0] == f"Quarry: export {NAME} job {succeeded[0]} recovered."
    assert any(line.startswith("Failed: 4 time(s) since ") for line in recovered)
    assert "Last reason: sftp: connection refused" in recovered
    # A new failure after the recovery opens a new series: alerted at once.
    fail_job(alerting, registry, new_job(export_world, config_id), "sftp: connection refused")
    assert len(alert_channels.webhook.posts) == 4
    assert [m["Subject"].strip() for m in alert_channels.emails()][-1].endswith(" failed")
