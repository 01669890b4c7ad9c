"""Alerts a person can live with: repeated failures of one thing (an export configuration,
one store's sync) make one alert, then a reminder with the count at most every
QUARRY_ALERT_REPEAT_MINUTES, and one "recovered" alert when it succeeds again.

The state of each thing is a registry row (AlertState, keyed by `subject`, e.g.
`export:exp_...` or `sync:st_...`), locked while it is read and written, so that workers
and the housekeeper reporting at once send one alert between them. Sending happens after
the commit, and never raises (destinations.alerts.send_alert).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from destinations.alerts import RECOVERED, STILL_FAILING, Alert, send_alert
from quarry.settings import Settings
from registry.db import Registry
from registry.models import AlertState, utcnow


def export_subject(config_id: str) -> str:
    return f"export:{config_id}"


def sync_subject(store_id: str | None) -> str:
    """A store's syncs (every kind of sync of it), or the exchange rates' (None)."""
    return f"sync:{store_id or 'exchange_rates'}"


def job_link(settings: Settings, job_id: str) -> tuple[str, str]:
    """The job in the API (QUARRY_PUBLIC_URL)."""
    return ("Job", f"{settings.public_url.rstrip('/')}/v1/export-jobs/{job_id}")


def run_link(settings: Settings, run_id: str) -> tuple[str, str]:
    """The run in the Dagster UI (QUARRY_DAGSTER_URL, the webserver's address)."""
    return ("Dagster run", f"{settings.dagster_url.rstrip('/')}/runs/{run_id}")


def _locked_state(
    registry: Registry, subject: str, change: Callable[[AlertState], Alert | None]
) -> Alert | None:
    for _ in range(2):  # a racing first failure may insert the row first: read it then
        try:
            with registry.session() as session:
                state = session.scalar(
                    select(AlertState).where(AlertState.subject == subject).with_for_update()
                )
                if state is None:
                    state = AlertState(subject=subject, failures=0, unreported=0)
                    session.add(state)
                return change(state)
        except IntegrityError:
            continue
    return None


def report_failure(
    settings: Settings,
    registry: Registry,
    subject: str,
    alert: Alert,
    *,
    now: datetime | None = None,
) -> Alert | None:
    """Count a failure of `subject` and send `alert` when it opens a series, or a reminder
    when the last alert is QUARRY_ALERT_REPEAT_MINUTES old. Returns what was sent."""
    if not settings.alerts_enabled:
        return None
    now = now or utcnow()
    repeat = timedelta(minutes=settings.alert_repeat_minutes)

    def change(state: AlertState) -> Alert | None:
        state.last_reason = alert.reason
        if state.failing_since is None:
            state.failing_since, state.failures, state.unreported = now, 1, 0
            state.last_sent_at = now
            return replace(alert, failures=1, failing_since=now)
        state.failures += 1
        if state.last_sent_at is not None and now - state.last_sent_at < repeat:
            state.unreported += 1
            return None
        state.last_sent_at, state.unreported = now, 0
        return replace(
            alert, state=STILL_FAILING, failures=state.failures, failing_since=state.failing_since
        )

    sent = _locked_state(registry, subject, change)
    if sent is not None:
        send_alert(settings, sent)
    return sent


def report_success(
    settings: Settings,
    registry: Registry,
    subject: str,
    alert: Alert,
    *,
    now: datetime | None = None,
) -> Alert | None:
    """End `subject`'s failure series, if it has one, with a "recovered" alert (`alert`
    names what succeeded; its reason is replaced by the series' last one). Returns what
    was sent."""
    if not settings.alerts_enabled:
        return None
    now = now or utcnow()
    with registry.session() as session:
        failing = session.scalar(
            select(AlertState.failing_since).where(AlertState.subject == subject)
        )
    if failing is None:  # the usual case, without a lock
        return None

    def change(state: AlertState) -> Alert | None:
        if state.failing_since is None:
            return None
        recovered = replace(
            alert,
            state=RECOVERED,
            reason=state.last_reason or "",
            failures=state.failures,
            failing_since=state.failing_since,
            at=now,
        )
        state.failing_since, state.failures, state.unreported = None, 0, 0
        state.last_sent_at = now
        return recovered

    sent = _locked_state(registry, subject, change)
    if sent is not None:
        send_alert(settings, sent)
    return sent
