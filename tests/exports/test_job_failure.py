"""A failed export job alerts the operators once, whoever fails it: its own run or the
reaper (exports/jobs/failure.py), through aiosmtpd and a webhook receiver."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from dagster import DagsterInstance

from destinations.alerts import ALERT_RETRY
from exports.jobs.execute import ExportFailed, execute_job
from exports.jobs.failure import fail_job
from pipelines.exports.reaper import reap
from quarry.settings import Settings
from registry.models import ExportJob, utcnow
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
    return export_world.settings.model_copy(
        update={**alert_channels.settings, "role_id": "orchestrator-1"}
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
