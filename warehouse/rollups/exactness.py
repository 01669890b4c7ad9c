"""Whether a rollup's buckets give a query's answer exactly, decided from tzdata per query.

A UTC-hour bucket lies in one local hour of a zone when every offset the zone has over
the window is a whole number of hours and every change between them falls on a whole UTC
hour: the zone's hours then start on UTC hours, so its hours, days, weeks ... are unions
of whole UTC hours. Australia/Lord_Howe (+10:30, and a 30-minute DST),
America/Caracas (-4:30 in 2007-2016), Asia/Kathmandu (+5:45) fail it.

A store-local day lies in one local day of the query's zone when the two zones have the
same offset at every instant around the window (the same zone, or two that agree then),
and no offset change falls within a day of the window's ends (a day that starts twice,
when clocks go back over midnight, is then never cut by the window).

Offsets are read from zoneinfo at each UTC midnight of the window; where two differ, the
change between them is found by bisection to the second. tzdata changes a zone's offset
at most once a day, so nothing is missed between midnights.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from functools import lru_cache
from zoneinfo import ZoneInfo

from warehouse.query.dates import Window

# Longer windows go to the facts rather than walk their days (a window may span millennia).
MAX_DAYS = 40 * 366
_DAY = timedelta(days=1)
_SECOND = timedelta(seconds=1)


def _offset(zone: ZoneInfo, at: datetime) -> timedelta:
    offset = at.astimezone(zone).utcoffset()
    assert offset is not None
    return offset


def changes(zone: ZoneInfo, first: datetime, last: datetime) -> list[tuple[datetime, timedelta]]:
    """The zone's offset at `first`, then each change up to `last`: (instant, new offset)."""
    out = [(first, _offset(zone, first))]
    day = first.replace(hour=0, minute=0, second=0, microsecond=0)
    while day < last:
        nxt = min(day + _DAY, last)
        before, after = _offset(zone, day), _offset(zone, nxt)
        if before != after:
            low, high = day, nxt  # offset(low) == before, offset(high) == after
            while high - low > _SECOND:
                mid = low + (high - low) / 2
                mid = mid.replace(microsecond=0)
                if mid <= low:
                    break
                if _offset(zone, mid) == before:
                    low = mid
                else:
                    high = mid
            out.append((high, after))
        day = nxt
    return out


def _span(windows: list[Window]) -> tuple[datetime, datetime] | None:
    """A day either side of the windows, or None when they are too long to walk."""
    first = min(w.gte for w in windows)
    last = max(w.lt for w in windows)
    try:
        first, last = first - _DAY, last + _DAY
    except OverflowError:
        return None
    if (last - first).days > MAX_DAYS:
        return None
    return first.astimezone(UTC), last.astimezone(UTC)


def _whole(instant: datetime, seconds: int) -> bool:
    return int(instant.timestamp()) % seconds == 0 and instant.microsecond == 0


def hours_exact(zone_name: str, windows: list[Window]) -> bool:
    """Do UTC hours answer windows of `zone_name` exactly (its hours start on UTC hours,
    and the windows start and end on UTC hours)?"""
    if not all(_whole(w.gte, 3600) and _whole(w.lt, 3600) for w in windows):
        return False
    span = _span(windows)
    if span is None:
        return False
    return _hours_exact(zone_name, *span)


@lru_cache(maxsize=1024)
def _hours_exact(zone_name: str, first: datetime, last: datetime) -> bool:
    steps = changes(ZoneInfo(zone_name), first, last)
    return all(
        offset.total_seconds() % 3600 == 0 and (k == 0 or _whole(at, 3600))
        for k, (at, offset) in enumerate(steps)
    )


def days_exact(zone_name: str, store_zones: set[str], windows: list[Window]) -> bool:
    """Do the stores' local days answer windows of `zone_name` exactly (each store's zone
    has the query zone's offsets around the windows, whose ends are local midnights away
    from any offset change)?"""
    span = _span(windows)
    if span is None:
        return False
    ends = tuple((w.gte, w.lt) for w in windows)
    return _days_exact(zone_name, frozenset(store_zones), ends, span)


@lru_cache(maxsize=1024)
def _days_exact(
    zone_name: str,
    store_zones: frozenset[str],
    ends: tuple[tuple[datetime, datetime], ...],
    span: tuple[datetime, datetime],
) -> bool:
    zone = ZoneInfo(zone_name)
    steps = changes(zone, *span)
    for other in store_zones - {zone_name}:
        if changes(ZoneInfo(other), *span) != steps:
            return False
    moves = [at for at, _ in steps[1:]]
    for end in (e for pair in ends for e in pair):
        local = end.astimezone(zone)
        if (local.hour, local.minute, local.second, local.microsecond) != (0, 0, 0, 0):
            return False
        if any(abs(at - end) < _DAY for at in moves):
            return False
    return True
