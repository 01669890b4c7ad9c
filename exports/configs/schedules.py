"""Scheduled exports: which configurations are due, from each one's cron and zone in the
registry (no code reload when a configuration changes)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from croniter import croniter
from sqlalchemy import select

from registry.db import Registry
from registry.models import ExportConfig


@dataclass(frozen=True)
class Due:
    config_id: str
    config_name: str
    scheduled_at: datetime  # UTC
    # Paused by an operator: the tick is skipped (and named in the sensor's log).
    paused: bool = False

    @property
    def run_key(self) -> str:
        """Configuration + scheduled time: Dagster requests each run once."""
        return f"{self.config_id}:{self.scheduled_at.isoformat()}"


def last_tick(cron: str, zone: str, since: datetime, now: datetime) -> datetime | None:
    """The latest time in (since, now] that `cron` names in `zone`, or None. Ticks missed
    while the daemon was down collapse into this one: a schedule catches up once."""
    # croniter works in whole seconds and get_prev is strictly before its start: start a
    # second after `now` so a tick at exactly `now` counts, then step back past `now`.
    start = (now + timedelta(seconds=1)).astimezone(ZoneInfo(zone)).replace(microsecond=0)
    ticks = croniter(cron, start)
    previous = ticks.get_prev(datetime)
    while previous > now:
        previous = ticks.get_prev(datetime)
    return previous if previous > since else None


def next_tick(cron: str, zone: str, now: datetime) -> datetime:
    """The first time after `now` that `cron` names in `zone` (aware, in `zone`)."""
    start = now.astimezone(ZoneInfo(zone)).replace(microsecond=0)
    return croniter(cron, start).get_next(datetime)


def due_exports(registry: Registry, since: datetime, now: datetime) -> list[Due]:
    """Every scheduled configuration with a tick in (since, now], paused ones marked."""
    with registry.session() as session:
        rows = session.execute(
            select(
                ExportConfig.id,
                ExportConfig.name,
                ExportConfig.schedule_cron,
                ExportConfig.schedule_timezone,
                ExportConfig.schedule_paused,
            ).where(ExportConfig.schedule_cron.is_not(None))
        ).all()
    due = []
    for config_id, name, cron, zone, paused in rows:
        tick = last_tick(cron, zone or "UTC", since, now)
        if tick is not None:
            due.append(Due(config_id, name, tick.astimezone(ZoneInfo("UTC")), bool(paused)))
    return due


def paused_exports(registry: Registry) -> list[str]:
    """Names of the scheduled configurations whose schedule is paused, sorted."""
    with registry.session() as session:
        names = session.scalars(
            select(ExportConfig.name).where(
                ExportConfig.schedule_cron.is_not(None), ExportConfig.schedule_paused.is_(True)
            )
        )
        return sorted(names)
