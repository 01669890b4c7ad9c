"""A failed sync run alerts the operators once: the run-failure sensor, evaluated tick by
tick against the instance a real (failing) `quarry sync` run wrote to."""

from __future__ import annotations

import pytest
from dagster import DagsterInstance, build_sensor_context

from pipelines.fleet.store_sensors import sync_failure_alerts, sync_recovery_alerts
from pipelines.resources import QuarryResource
from pipelines.runner import sync_stores
from platforms.base import Connector
from quarry.settings import Settings
from registry.accounts import get_account, get_store
from registry.db import Registry
from tests.destinations.servers import AlertChannels
from tests.pipelines.helpers import FailingConnector, PlatformResource


class PlatformDown(PlatformResource):
    """The platform fails on the first page of orders."""

    def wrap(self, connector: Connector) -> Connector:
        return FailingConnector(connector, "orders", pages=0)


def tick(instance: DagsterInstance, cursor: str | None) -> str | None:
    """One evaluation of the sensor, as the daemon makes it; returns the new cursor."""
    with build_sensor_context(
        instance=instance, cursor=cursor, resources={"quarry": QuarryResource()}
    ) as context:
        return sync_failure_alerts.evaluate_tick(context).cursor


def test_a_failed_sync_alerts_once_and_only_when_configured(
    settings: Settings,
    registry: Registry,
    instance: DagsterInstance,
    store_ids: list[str],
    alert_channels: AlertChannels,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store_id = store_ids[0]
    cursor = tick(instance, None)  # the sensor starts from now

    # No QUARRY_ALERT_* set: the failure passes unsent.
    [*_, unsent] = sync_stores(settings, registry, [store_id], resources={"quarry": PlatformDown()})
    assert not unsent.success
    cursor = tick(instance, cursor)
    assert alert_channels.emails() == [] and alert_channels.webhook.posts == []

    for name, value in alert_channels.environment.items():
        monkeypatch.setenv(name, value)
    [failed] = sync_stores(settings, registry, [store_id], resources={"quarry": PlatformDown()})
    assert not failed.success
    cursor = tick(instance, cursor)
    [message] = alert_channels.emails()
    [post] = alert_channels.webhook.posts
    with registry.session() as session:
        store = get_store(session, store_id)
        account = get_account(session, store.account_id)
    assert message["Subject"] == f"Quarry: sync of store {store.name} ({store_id}) failed"
    lines = message.get_content().splitlines()
    assert post["text"].splitlines() == lines
    assert f"Account: {account.name} ({account.id})" in lines
    assert any(
        line.startswith("Reason: ") and "platform down after 0 pages of orders" in line
        for line in lines
    ), lines

    # The next tick has nothing new: the cursor moved past the failure.
    tick(instance, cursor)
    assert len(alert_channels.emails()) == 1 and len(alert_channels.webhook.posts) == 1

    # The same store failing again within QUARRY_ALERT_REPEAT_MINUTES: grouped, not sent.
    [again] = sync_stores(settings, registry, [store_id], resources={"quarry": PlatformDown()})
    assert not again.success
    cursor = tick(instance, cursor)
    assert len(alert_channels.webhook.posts) == 1

    # It syncs again: one "recovered" alert, with the failures it ends and the run's link.
    recovery_cursor = recovery_tick(instance, None)
    [synced] = sync_stores(settings, registry, [store_id])
    assert synced.success
    recovery_cursor = recovery_tick(instance, recovery_cursor)
    assert len(alert_channels.webhook.posts) == 2
    lines = alert_channels.webhook.posts[1]["text"].splitlines()
    assert lines[0] == f"Quarry: sync of store {store.name} ({store_id}) recovered."
    assert f"Account: {account.name} ({account.id})" in lines
    assert any(line.startswith("Failed: 2 time(s) since ") for line in lines), lines
    assert any(line.startswith("Dagster run: http") and "/runs/" in line for line in lines)
    recovery_tick(instance, recovery_cursor)
    assert len(alert_channels.webhook.posts) == 2


def recovery_tick(instance: DagsterInstance, cursor: str | None) -> str | None:
    with build_sensor_context(
        instance=instance, cursor=cursor, resources={"quarry": QuarryResource()}
    ) as context:
        return sync_recovery_alerts.evaluate_tick(context).cursor
