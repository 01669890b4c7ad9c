"""When things happen: seconds since the epoch (UTC), drawn with a weekly cycle, a Black Friday
peak, a December lift, a daily rhythm in the store's own zone and slow growth."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import numpy as np
import pyarrow as pa

from warehouse.schemas import TS

DAY = 86_400
HOUR = 3_600
SPAN_DAYS = 730
_EPOCH = date(1970, 1, 1)

# Monday first. Shoppers buy most at the weekend, least mid-week.
WEEKDAY_WEIGHTS = np.array([1.0, 0.88, 0.9, 0.95, 1.05, 1.18, 1.3])
# By local hour: quiet at night, busiest in the evening.
HOUR_WEIGHTS = np.array([
    0.30, 0.20, 0.15, 0.10, 0.10, 0.15, 0.30, 0.50, 0.70, 0.90, 1.00, 1.10,
    1.20, 1.10, 1.00, 1.00, 1.10, 1.20, 1.30, 1.50, 1.60, 1.50, 1.10, 0.60,
])  # fmt: skip


def day_seconds(day: date) -> int:
    """Seconds since the epoch at 00:00 UTC of `day`."""
    return (day - _EPOCH).days * DAY


def to_datetime(seconds: int) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def timestamps(seconds: np.ndarray, valid: np.ndarray | None = None) -> pa.Array:
    """timestamp[us, UTC] values; where `valid` is False, null."""
    micros = np.asarray(seconds, dtype=np.int64) * 1_000_000
    mask = None if valid is None else ~np.asarray(valid, dtype=bool)
    return pa.array(micros, type=TS, mask=mask)


def seconds_of(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Whole seconds of timestamp[us] values (nulls read as -1)."""
    micros = values.cast(pa.int64()).fill_null(-1_000_000).to_numpy(zero_copy_only=False)
    return np.asarray(micros, dtype=np.int64) // 1_000_000


def black_friday(year: int) -> date:
    """The day after the fourth Thursday of November."""
    first = date(year, 11, 1)
    thursday = first + timedelta(days=(3 - first.weekday()) % 7 + 21)
    return thursday + timedelta(days=1)


def _season(day: date) -> float:
    friday = black_friday(day.year)
    offset = (day - friday).days
    peaks = {-1: 1.6, 0: 5.0, 1: 2.6, 2: 2.2, 3: 3.5, 4: 1.5}
    if offset in peaks:
        return peaks[offset]
    if -8 <= offset < -1:
        return 1.3
    if day.month == 12:
        return 1.4 if day.day <= 20 else (0.7 if 24 <= day.day <= 26 else 1.0)
    return 0.85 if day.month == 1 else 1.0


def day_weight(day: date, anchor: date) -> float:
    """How busy a (local) day is; about 0.75 two years before the anchor, 1.25 at it."""
    trend = max(0.3, 1.25 + 0.5 * (day - anchor).days / SPAN_DAYS)
    return float(WEEKDAY_WEIGHTS[day.weekday()] * _season(day) * trend)


def _local_days(start: int, end: int, zone: ZoneInfo) -> list[date]:
    first = to_datetime(start).astimezone(zone).date()
    last = to_datetime(end - 1).astimezone(zone).date()
    return [first + timedelta(days=i) for i in range((last - first).days + 1)]


def _offset(day: date, zone: ZoneInfo) -> int:
    noon = datetime(day.year, day.month, day.day, 12, tzinfo=zone)
    delta = noon.utcoffset()
    return int(delta.total_seconds()) if delta else 0


def expected_weight(start: int, end: int, timezone: str, anchor: date) -> float:
    """Sum of day weights over [start, end), counting partly covered days by their share."""
    zone = ZoneInfo(timezone)
    total = 0.0
    for day in _local_days(start, end, zone):
        lo = day_seconds(day) - _offset(day, zone)
        covered = min(end, lo + DAY) - max(start, lo)
        total += day_weight(day, anchor) * max(0, covered) / DAY
    return total


def draw_times(
    rng: np.random.Generator, count: int, start: int, end: int, timezone: str, anchor: date
) -> np.ndarray:
    """`count` sorted whole-second times in [start, end), busy days and hours likelier."""
    zone = ZoneInfo(timezone)
    days = _local_days(start, end, zone)
    weights = np.array([day_weight(d, anchor) for d in days])
    day_start = np.array([day_seconds(d) - _offset(d, zone) for d in days], dtype=np.int64)
    hour_cdf = np.cumsum(HOUR_WEIGHTS) / HOUR_WEIGHTS.sum()
    day_cdf = np.cumsum(weights) / weights.sum()
    found = np.zeros(0, dtype=np.int64)
    # Days cut by the window's edges reject the draws outside it; redraw until full.
    while len(found) < count:
        need = count - len(found)
        day = np.minimum(np.searchsorted(day_cdf, rng.random(need), side="right"), len(days) - 1)
        hour = np.searchsorted(hour_cdf, rng.random(need), side="right")
        second = rng.integers(0, HOUR, need)
        times = day_start[day] + hour * HOUR + second
        found = np.concatenate([found, times[(times >= start) & (times < end)]])
    return np.sort(found[:count])


def later(rng: np.random.Generator, after: np.ndarray, limit: int | np.ndarray) -> np.ndarray:
    """A whole-second time in (after, limit] for each `after` (limit itself when no room)."""
    room = np.maximum(np.asarray(limit) - after, 1)
    return np.minimum(after + 1 + (rng.random(len(after)) * room).astype(np.int64), limit)
