"""Alerts to whoever runs Quarry: a failed sync or export job, mailed and/or posted to a
webhook as Slack-compatible JSON (`{"text": ...}`).

Configured once per deployment (QUARRY_ALERT_EMAIL with QUARRY_ALERT_SMTP_URL,
QUARRY_ALERT_WEBHOOK_URL; docs/operations.md), never by API clients: the service promises
them no callback. Mail goes through the email destination's own SMTP code. An alert that
cannot be sent is a warning in the log and nothing more: it must never fail the run or
hide the failure it reports. The callers send each failure once (exports.jobs.failure,
pipelines.fleet.store_sensors), through destinations.alert_groups, which groups repeated failures
of one export or store.
"""

from __future__ import annotations

import logging
import socket
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import unquote, urlsplit

import httpx

from destinations.base import DeliveryError, describe_exception
from destinations.email import EmailDestination
from destinations.retry import RetryPolicy, run_with_retries
from quarry.errors import InvalidRequest
from quarry.redaction import redacting, scrub
from quarry.settings import Settings

logger = logging.getLogger(__name__)

# Short: an alert is sent from a failure path (a run ending, the housekeeper's pass) that
# should not wait long for a mail server that is down.
ALERT_RETRY = RetryPolicy(attempts=3, initial_wait=1.0, max_wait=5.0)
TIMEOUT_SECONDS = 10
# Which variable sets each email destination setting, to name it when it is not usable.
_VARIABLES = {"to": "QUARRY_ALERT_EMAIL", "from_address": "QUARRY_ALERT_EMAIL_FROM"}


FAILED, STILL_FAILING, RECOVERED = "failed", "still failing", "recovered"
# Not a failure: something an operator should know happened (a changed-rows export that
# had to start over and deliver every row again).
NOTICE = "notice"


@dataclass(frozen=True)
class Alert:
    """One failure (or recovery) as an operator reads it. `what` names the thing ("export
    Daily orders (cfg_1) job job_1"); `account` is "<name> (<id>)", None for what belongs
    to no account (exchange rates). `state` says whether this is the first failure of a
    series, a reminder (`failures` so far, since `failing_since`) or the recovery that ends
    it (destinations.alert_groups); `links` are (label, URL): the job in the API, the run in
    the Dagster UI."""

    what: str
    account: str | None
    reason: str
    at: datetime
    state: str = FAILED
    failures: int = 1
    failing_since: datetime | None = None
    links: tuple[tuple[str, str], ...] = ()

    @property
    def subject(self) -> str:
        if self.state == STILL_FAILING:
            return f"Quarry: {self.what} still failing ({self.failures} failures)"
        if self.state == RECOVERED:
            return f"Quarry: {self.what} recovered"
        if self.state == NOTICE:
            return f"Quarry: {self.what}"
        return f"Quarry: {self.what} failed"

    def text(self, role_id: str) -> str:
        """The message, secrets masked (quarry.redaction): the reason may quote anything a
        library raised."""
        host = socket.gethostname()
        since = (
            f"{self.failing_since.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC"
            if self.failing_since
            else None
        )
        series = None
        if self.state == STILL_FAILING:
            series = f"Failures: {self.failures} since {since}"
        elif self.state == RECOVERED:
            series = f"Failed: {self.failures} time(s) since {since}, until this success"
        lines = [
            f"{self.subject}.",
            "",
            f"Account: {self.account}" if self.account else None,
            series,
            (f"Last reason: {self.reason}" if self.state == RECOVERED else f"Reason: {self.reason}")
            if self.reason
            else None,
            f"When: {self.at.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC",
            *(f"{label}: {url}" for label, url in self.links),
            f"Host: {host}" + (f" (QUARRY_ROLE_ID {role_id})" if role_id != host else ""),
        ]
        return scrub("\n".join(line for line in lines if line is not None))


def send_alert(settings: Settings, alert: Alert, *, retry: RetryPolicy = ALERT_RETRY) -> None:
    """Mail `alert` to QUARRY_ALERT_EMAIL and post it to QUARRY_ALERT_WEBHOOK_URL, whichever
    are set. Never raises: a channel that fails is logged as a warning."""
    if not settings.alerts_enabled:
        return
    # The SMTP password and the webhook's URL (a Slack webhook's path is its key) stay out
    # of every log line written meanwhile: httpx logs the URL it posts to.
    with redacting(_secrets(settings)):
        text = alert.text(settings.role_id)
        if settings.alert_recipients:
            try:
                _mailer(settings, retry).send_text(alert.subject, text)
            except Exception as exc:  # an alert never breaks the failure path it reports
                _warn("email", alert, exc)
        if settings.alert_webhook_url:
            try:
                _post(settings.alert_webhook_url, text, retry)
            except Exception as exc:
                _warn("webhook", alert, exc)


def _secrets(settings: Settings) -> list[str]:
    found = []
    for url in (settings.alert_smtp_url, settings.alert_webhook_url):
        if url:
            parts = urlsplit(url)
            found += [url, parts.path + (f"?{parts.query}" if parts.query else "")]
            found += [unquote(parts.password)] if parts.password else []
    return found


def _warn(channel: str, alert: Alert, exc: Exception) -> None:
    reason = exc.reason if isinstance(exc, DeliveryError) else describe_exception(exc)
    logger.warning("alert %s about %s not sent: %s", channel, alert.what, reason)


def _mailer(settings: Settings, retry: RetryPolicy) -> EmailDestination:
    """An email destination to the alert recipients through QUARRY_ALERT_SMTP_URL:
    smtp:// is STARTTLS (port 587 by default), smtps:// implicit TLS (465)."""
    assert settings.alert_smtp_url is not None  # the settings require it with the addresses
    url = urlsplit(settings.alert_smtp_url)
    implicit_tls = url.scheme == "smtps"
    recipients = settings.alert_recipients
    destination: dict[str, Any] = {
        "host": url.hostname,
        "port": url.port or (465 if implicit_tls else 587),
        "security": "tls" if implicit_tls else "starttls",
        "from_address": settings.alert_email_from or recipients[0],
        "to": recipients,
        "timeout_seconds": TIMEOUT_SECONDS,
    }
    credentials = (
        {"username": unquote(url.username), "password": unquote(url.password or "")}
        if url.username
        else {}
    )
    # The operator's own server, like the registry's: private and loopback addresses are
    # fine. The guard is there for addresses that API clients choose.
    trusted = settings.model_copy(update={"allow_private_hosts": True})
    try:
        normalised = EmailDestination.validate(destination, credentials, trusted)
    except InvalidRequest as exc:
        problems = (
            "; ".join(f"{_variable(e['field'])}: {e['message']}" for e in exc.errors) or exc.detail
        )
        raise DeliveryError(problems) from None
    return EmailDestination(normalised, credentials, trusted, retry=retry)


def _variable(field: str) -> str:
    """The variable behind an email destination field (`destination.settings.to[0]`)."""
    name = field.rsplit(".", 1)[-1].split("[", 1)[0]
    return _VARIABLES.get(name, "QUARRY_ALERT_SMTP_URL")


def _post(url: str, text: str, retry: RetryPolicy) -> None:
    """POST {"text": text} to `url`; network failures, 429 and 5xx are retried per `retry`.
    Reasons name the scheme and host only: the rest of the URL is a secret."""
    parts = urlsplit(url)
    where = f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}"

    def once() -> None:
        try:
            response = httpx.post(url, json={"text": text}, timeout=TIMEOUT_SECONDS)
        except httpx.TransportError as exc:
            raise DeliveryError(
                f"{where}: {type(exc).__name__} ({describe_exception(exc)})", transient=True
            ) from None
        if response.is_error:
            transient = response.status_code == 429 or response.status_code >= 500
            raise DeliveryError(f"{where} answered {response.status_code}", transient=transient)

    run_with_retries(once, retry, describe=f"alert webhook {where}")
