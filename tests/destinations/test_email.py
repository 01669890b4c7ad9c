"""Email against real aiosmtpd servers, over STARTTLS and implicit TLS, with AUTH."""

from __future__ import annotations

import re
from email.message import EmailMessage
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from destinations import signed_links
from destinations.base import Delivery, DeliveryError
from destinations.email import EmailDestination
from quarry.errors import InvalidRequest
from quarry.settings import Settings
from tests.destinations.conftest import (
    REFUSED_RECIPIENT,
    SmtpServer,
    build_destination,
    free_port,
    make_delivery,
)


@pytest.fixture
def recipient(request: pytest.FixtureRequest) -> str:
    """An address unique to the test, to find its messages on the shared server."""
    name = re.sub(r"[^a-z0-9]", "-", request.node.name.lower())[:50]
    return f"{name}@example.com"


def mail_settings(
    server: SmtpServer, tls: dict[str, str], to: list[str], **extra: Any
) -> dict[str, Any]:
    return {
        "host": "127.0.0.1",
        "port": server.port,
        "security": server.security,
        "ca_certificate": tls["ca_pem"],
        "from_address": "exports@quarry.example.com",
        "to": to,
        "timeout_seconds": 5,
        **extra,
    }


build = partial(build_destination, EmailDestination)


def attachment_bytes(message: EmailMessage) -> tuple[str, bytes]:
    parts = list(message.iter_attachments())
    assert len(parts) == 1
    return str(parts[0].get_filename()), parts[0].get_payload(decode=True)


@pytest.mark.parametrize("server_name", ["smtp_starttls", "smtp_tls"])
def test_attaches_the_file(
    server_name: str,
    request: pytest.FixtureRequest,
    tls: dict[str, str],
    app_settings: Settings,
    delivery: Delivery,
    recipient: str,
) -> None:
    server: SmtpServer = request.getfixturevalue(server_name)
    settings = mail_settings(
        server, tls, [recipient], cc=["copy@example.com"], subject="Daily {file_name}"
    )
    receipt = build(settings, server.credentials(), app_settings).deliver(delivery)
    messages = server.received(recipient)
    assert len(messages) == 1
    message = messages[0]
    assert message["Subject"] == "Daily orders.csv"
    assert message["From"] == "exports@quarry.example.com"
    assert message["To"] == recipient and message["Cc"] == "copy@example.com"
    name, data = attachment_bytes(message)
    assert name == "orders.csv"
    assert data == delivery.path.read_bytes()
    assert receipt.location == f"mailto:{recipient},copy@example.com"
    assert receipt.details["delivered_as"] == "attachment"
    assert receipt.details["message_id"] == message["Message-ID"]


def test_large_file_is_sent_as_signed_link(
    smtp_starttls: SmtpServer,
    tls: dict[str, str],
    app_settings: Settings,
    tmp_path: Path,
    recipient: str,
) -> None:
    delivery = make_delivery(tmp_path, 200_000, job_id="job-large-1")
    settings = mail_settings(smtp_starttls, tls, [recipient], attachment_max_bytes=100_000)
    receipt = build(settings, smtp_starttls.credentials(), app_settings).deliver(delivery)
    (message,) = smtp_starttls.received(recipient)
    assert list(message.iter_attachments()) == []
    body = message.get_body(preferencelist=("plain",)).get_content()  # type: ignore[union-attr]
    match = re.search(r"https://quarry\.example\.test/v1/downloads/(\S+)", body)
    assert match, body
    assert signed_links.verify_download_token(app_settings, match.group(1)) == "job-large-1"
    assert receipt.details["delivered_as"] == "link"
    assert match.group(1) not in str(receipt)


def test_bad_credentials(
    smtp_starttls: SmtpServer,
    tls: dict[str, str],
    app_settings: Settings,
    delivery: Delivery,
    recipient: str,
) -> None:
    credentials = {"username": "mailer", "password": "wrong-password"}
    with pytest.raises(DeliveryError) as failure:
        build(mail_settings(smtp_starttls, tls, [recipient]), credentials, app_settings).deliver(
            delivery
        )
    assert "login refused (535)" in failure.value.reason
    assert f"smtp 127.0.0.1:{smtp_starttls.port}" in failure.value.reason
    assert smtp_starttls.received(recipient) == []


def test_every_recipient_refused(
    smtp_starttls: SmtpServer, tls: dict[str, str], app_settings: Settings, delivery: Delivery
) -> None:
    with pytest.raises(DeliveryError) as failure:
        build(
            mail_settings(smtp_starttls, tls, [REFUSED_RECIPIENT]),
            smtp_starttls.credentials(),
            app_settings,
        ).deliver(delivery)
    assert f"refused every recipient: {REFUSED_RECIPIENT} (550" in failure.value.reason
    assert not failure.value.transient


def test_some_recipients_refused(
    smtp_starttls: SmtpServer,
    tls: dict[str, str],
    app_settings: Settings,
    delivery: Delivery,
    recipient: str,
) -> None:
    settings = mail_settings(smtp_starttls, tls, [recipient, REFUSED_RECIPIENT])
    with pytest.raises(DeliveryError) as failure:
        build(settings, smtp_starttls.credentials(), app_settings).deliver(delivery)
    assert "refused some recipients" in failure.value.reason
    assert len(smtp_starttls.received(recipient)) == 1  # not sent twice


def test_untrusted_certificate(
    smtp_tls: SmtpServer,
    tls: dict[str, str],
    app_settings: Settings,
    delivery: Delivery,
    recipient: str,
) -> None:
    settings = mail_settings(smtp_tls, tls, [recipient])
    del settings["ca_certificate"]
    with pytest.raises(DeliveryError) as failure:
        build(settings, smtp_tls.credentials(), app_settings).deliver(delivery)
    assert "certificate is not trusted" in failure.value.reason


def test_server_down(
    smtp_starttls: SmtpServer,
    tls: dict[str, str],
    app_settings: Settings,
    delivery: Delivery,
    recipient: str,
) -> None:
    settings = mail_settings(smtp_starttls, tls, [recipient], port=free_port())
    with pytest.raises(DeliveryError) as failure:
        build(settings, smtp_starttls.credentials(), app_settings).deliver(delivery)
    assert "connection refused" in failure.value.reason
    assert failure.value.transient


def test_connection_cut_during_data_is_retried(
    smtp_starttls: SmtpServer,
    tls: dict[str, str],
    app_settings: Settings,
    tmp_path: Path,
    recipient: str,
    cutting_proxy: Any,
) -> None:
    proxy = cutting_proxy(smtp_starttls.port, cut_after=150_000, cuts=1)
    delivery = make_delivery(tmp_path, 400_000)
    settings = mail_settings(smtp_starttls, tls, [recipient], port=proxy.port)
    build(settings, smtp_starttls.credentials(), app_settings).deliver(delivery)
    assert proxy.cut_count == 1
    messages = smtp_starttls.received(recipient)
    assert len(messages) == 1  # the cut message was never accepted
    assert attachment_bytes(messages[0])[1] == delivery.path.read_bytes()


@pytest.mark.parametrize(
    ("settings", "field"),
    [
        ({"subject": "Hi\r\nBcc: victim@example.com"}, "destination.settings.subject"),
        ({"to": ["a@example.com\r\nBcc: victim@example.com"]}, "destination.settings.to[0]"),
        ({"to": ["ok@example.com", "not-an-address"]}, "destination.settings.to[1]"),
        ({"cc": ["Name <a@example.com>"]}, "destination.settings.cc[0]"),
        ({"from_address": "x@example.com\nX-Injected: 1"}, "destination.settings.from_address"),
        ({"reply_to": "reply@localhost"}, "destination.settings.reply_to"),
        ({"to": []}, "destination.settings.to"),
        ({"security": "none"}, "destination.settings.security"),
        ({"attachment_max_bytes": -1}, "destination.settings.attachment_max_bytes"),
    ],
)
def test_validation_names_the_field(
    smtp_starttls: SmtpServer,
    tls: dict[str, str],
    app_settings: Settings,
    settings: dict[str, Any],
    field: str,
) -> None:
    with pytest.raises(InvalidRequest) as failure:
        EmailDestination.validate(
            {**mail_settings(smtp_starttls, tls, ["a@example.com"]), **settings},
            smtp_starttls.credentials(),
            app_settings,
        )
    assert field in [e["field"] for e in failure.value.errors]


def test_username_without_password_is_refused(
    smtp_starttls: SmtpServer, tls: dict[str, str], app_settings: Settings
) -> None:
    with pytest.raises(InvalidRequest) as failure:
        EmailDestination.validate(
            mail_settings(smtp_starttls, tls, ["a@example.com"]),
            {"username": "mailer"},
            app_settings,
        )
    assert failure.value.errors[0]["field"] == "destination.credentials.password"


def test_default_port_follows_security(app_settings: Settings) -> None:
    base = {"host": "127.0.0.1", "from_address": "a@example.com", "to": ["b@example.com"]}
    assert EmailDestination.validate(base, {}, app_settings)["port"] == 587
    assert EmailDestination.validate({**base, "security": "tls"}, {}, app_settings)["port"] == 465
