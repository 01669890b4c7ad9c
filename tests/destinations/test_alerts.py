"""Operator alerts through real servers: aiosmtpd (STARTTLS, AUTH) and a webhook receiver.
What a failure sends is tested where failures happen (tests/exports/test_job_failure.py,
tests/pipelines/test_sync_alerts.py); here, the message and the channels' own failures."""

from __future__ import annotations

import logging
import socket
from datetime import UTC, datetime
from pathlib import Path

import pytest

from destinations.alerts import Alert, send_alert
from quarry.settings import Settings, load_settings
from tests.destinations.conftest import FAST_RETRY, free_port
from tests.destinations.servers import AlertChannels

FAILURE = Alert(
    what="export Daily orders job job_1",
    account="Acme (acc_1)",
    reason="the server said 401 to Bearer s3cr3t-token-value",
    at=datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC),
)


def settings_for(tmp_path: Path, **alerts: str) -> Settings:
    return load_settings(home=tmp_path / "home", role_id="worker-7", **alerts)


def test_an_alert_is_mailed_and_posted(tmp_path: Path, alert_channels: AlertChannels) -> None:
    send_alert(settings_for(tmp_path, **alert_channels.settings), FAILURE, retry=FAST_RETRY)
    [message] = alert_channels.emails()
    [post] = alert_channels.webhook.posts
    assert message["Subject"] == "Quarry: export Daily orders job job_1 failed"
    assert message["From"] == "quarry@alerts.example.com"
    assert message["To"] == alert_channels.recipient
    lines = message.get_content().splitlines()
    assert list(post) == ["text"] and post["text"].splitlines() == lines
    assert lines == [
        "Quarry: export Daily orders job job_1 failed.",
        "",
        "Account: Acme (acc_1)",
        # The token's shape is masked (quarry.redaction).
        "Reason: the server said 401 to Bearer ***",
        "When: 2026-03-04 05:06:07 UTC",
        f"Host: {socket.gethostname()} (QUARRY_ROLE_ID worker-7)",
    ]


def test_several_addresses_each_get_the_alert(
    tmp_path: Path, alert_channels: AlertChannels
) -> None:
    other = f"second-{alert_channels.recipient}"
    both = {**alert_channels.settings, "alert_email": f"{alert_channels.recipient}, {other}"}
    send_alert(settings_for(tmp_path, **both), FAILURE, retry=FAST_RETRY)
    assert len(alert_channels.emails()) == 1
    assert len(alert_channels.smtp.received(other)) == 1


def test_nothing_is_sent_when_no_alert_is_configured(
    tmp_path: Path, alert_channels: AlertChannels
) -> None:
    settings = settings_for(tmp_path)
    assert not settings.alerts_enabled
    send_alert(settings, FAILURE, retry=FAST_RETRY)
    # Only the webhook: no SMTP connection is even opened.
    only_webhook = settings_for(tmp_path, alert_webhook_url=alert_channels.webhook.url)
    send_alert(only_webhook, FAILURE, retry=FAST_RETRY)
    assert alert_channels.emails() == []
    assert len(alert_channels.webhook.posts) == 1


def test_failing_channels_are_warnings_and_keep_their_secrets(
    tmp_path: Path, alert_channels: AlertChannels, caplog: pytest.LogCaptureFixture
) -> None:
    alert_channels.webhook.status = 500
    down = alert_channels.settings | {
        "alert_smtp_url": f"smtp://mailer:Smtp-pass-123@127.0.0.1:{free_port()}"
    }
    with caplog.at_level(logging.DEBUG):
        send_alert(settings_for(tmp_path, **down), FAILURE, retry=FAST_RETRY)  # no exception
    assert len(alert_channels.webhook.posts) == FAST_RETRY.attempts  # a 500 is retried
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(
        m.startswith("alert email about export Daily orders job job_1 not sent: email smtp")
        and "connection refused" in m
        for m in warnings
    ), warnings
    assert any(
        m.startswith("alert webhook about export Daily orders job job_1 not sent")
        and m.endswith("answered 500")
        for m in warnings
    ), warnings
    logged = "\n".join(r.getMessage() for r in caplog.records)
    secret_path = alert_channels.webhook.url.split("/services/", 1)[1]
    assert "Smtp-pass-123" not in logged and secret_path not in logged


def test_an_unusable_address_names_its_variable(
    tmp_path: Path, alert_channels: AlertChannels, caplog: pytest.LogCaptureFixture
) -> None:
    settings = settings_for(tmp_path, **alert_channels.settings | {"alert_email": "not-an-address"})
    with caplog.at_level(logging.WARNING):
        send_alert(settings, FAILURE, retry=FAST_RETRY)
    assert "QUARRY_ALERT_EMAIL: is not a valid email address" in caplog.text
    assert len(alert_channels.webhook.posts) == 1  # the other channel still sends
