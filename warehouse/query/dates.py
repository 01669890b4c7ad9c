"""Time windows: resolve SINCE / UNTIL / DURING / COMPARE TO operands in an IANA zone.

Every window is half-open [gte, lt) in UTC. Calendar arithmetic (days, weeks, months) is
done on local wall-clock dates and each boundary is converted to UTC on its own, so a day
that is 23 or 25 hours long across a DST change is still exactly one day.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from dateutil.relativedelta import relativedelta

from warehouse.query import ast
from warehouse.query.diagnostics import did_you_mean

UNITS = {
    "s": "second",
    "min": "minute",
    "h": "hour",
    "d": "day",
    "w": "week",
    "m": "month",
    "q": "quarter",
    "y": "year",
}
# Units shorter than a day are measured on the UTC timeline (an hour is 3,600 s even on a
# DST night); days and longer on local calendar dates.
_CLOCK_UNITS = {"second": timedelta(seconds=1), "minute": timedelta(minutes=1),
                "hour": timedelta(hours=1)}  # fmt: skip
PERIODS = ("day", "week", "month", "quarter", "year")
NAMED_RANGES = tuple(
    [f"{edge}_{unit}" for edge in ("this", "last") for unit in ("week", "month", "quarter", "year")]
    + ["today", "yesterday", "this_weekend", "last_weekend"]
)
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")

# Quarry's calendar. Python's runs from 0001 to 9999; a year is kept free at each end so
# that converting to any zone, a window's exclusive end, a comparison a year back, the
# last bucket of a timeseries and the exchange-rate days around a window all stay inside
# it (docs/query-language.md, "Dates").
FIRST_YEAR = 2
LAST_YEAR = 9998
EARLIEST = datetime(FIRST_YEAR, 1, 1, tzinfo=UTC)
LATEST = datetime(LAST_YEAR + 1, 1, 1, tzinfo=UTC)  # exclusive
CALENDAR = f"dates run from {FIRST_YEAR:04d} to {LAST_YEAR:04d}"

_LITERAL = re.compile(
    r"(?P<year>\d{4})-(?P<month>\d{2})-(?P<day>\d{2})"
    r"(?:T(?P<hour>\d{2}):(?P<minute>\d{2})(?::(?P<second>\d{2})(?:\.\d{1,6})?)?"
    r"(?:Z|[+-](?P<zone_hours>\d{2}):(?P<zone_minutes>\d{2}))?)?"
)


class DateError(ValueError):
    """A date operand that cannot be resolved; the message is user-facing."""


def out_of_range(what: str) -> DateError:
    return DateError(f"{what} is out of range ({CALENDAR}).")


@dataclass(frozen=True)
class Window:
    gte: datetime  # aware, UTC
    lt: datetime

    def public(self) -> dict[str, str]:
        return {"gte": iso_utc(self.gte), "lt": iso_utc(self.lt)}


@dataclass(frozen=True)
class Clock:
    """What the resolution depends on: the current instant, the zone, the first weekday."""

    now: datetime  # aware
    zone: ZoneInfo
    week_start: int = 0  # 0 = Monday ... 6 = Sunday

    @property
    def local_now(self) -> datetime:
        return self.now.astimezone(self.zone).replace(tzinfo=None)

    @property
    def today(self) -> date:
        return self.local_now.date()

    def utc(self, local: datetime) -> datetime:
        """A local wall-clock time as a UTC instant. In a DST gap the offset in force
        before the change applies, which maps a skipped midnight to the first real instant
        of that day."""
        return local.replace(tzinfo=self.zone).astimezone(UTC)

    def local(self, instant: datetime) -> datetime:
        return instant.astimezone(self.zone).replace(tzinfo=None)

    def midnight(self, day: date) -> datetime:
        return self.utc(datetime.combine(day, time()))


@dataclass(frozen=True)
class Span:
    """What a date operand names: a period [start, end), or an instant (start == end)."""

    start: datetime
    end: datetime
    instant: bool = False


def iso_utc(instant: datetime) -> str:
    return instant.astimezone(UTC).isoformat().replace("+00:00", "Z")


def parse_literal(text: str) -> date | datetime:
    """A date (2024-01-31) or timestamp (2024-01-31T10:00:00Z) literal as the lexer found
    it. Raises DateError naming the part that is wrong, or when the year is outside
    Quarry's calendar."""
    m = _LITERAL.fullmatch(text)
    if m is None:
        raise DateError(f"{text} is not a date: write 2024-01-31 or 2024-01-31T10:00:00.")
    year, month, day = (int(m[k]) for k in ("year", "month", "day"))
    if not FIRST_YEAR <= year <= LAST_YEAR:
        raise out_of_range(text)
    if not 1 <= month <= 12:
        raise DateError(f"{text} is not a date: months run from 01 to 12.")
    days = calendar.monthrange(year, month)[1]
    if not 1 <= day <= days:
        name = calendar.month_name[month]
        raise DateError(f"{text} is not a date: {name} {year:04d} has {days} days.")
    if m["hour"] is None:
        return date(year, month, day)
    limits: tuple[tuple[str, int, str], ...] = (
        ("hour", 23, "hours"),
        ("minute", 59, "minutes"),
        ("second", 59, "seconds"),
        ("zone_hours", 23, "zone offset hours"),
        ("zone_minutes", 59, "zone offset minutes"),
    )
    for group, top, name in limits:
        if m[group] is not None and int(m[group]) > top:
            raise DateError(f"{text} is not a timestamp: {name} run from 00 to {top}.")
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _in_calendar(start: datetime, end: datetime, what: str) -> None:
    if start < EARLIEST or end > LATEST:
        raise out_of_range(what)


# ---- periods ----


def period_start(unit: str, day: date, week_start: int) -> date:
    if unit == "day":
        return day
    if unit == "week":
        return day - timedelta(days=(day.weekday() - week_start) % 7)
    if unit == "month":
        return day.replace(day=1)
    if unit == "quarter":
        return date(day.year, 3 * ((day.month - 1) // 3) + 1, 1)
    return date(day.year, 1, 1)


# Days in one step of the fixed-length calendar units, and relativedelta's keyword and
# multiple for the others.
_DAYS = {"day": 1, "week": 7}
_STEPS = {"month": ("months", 1), "quarter": ("months", 3), "year": ("years", 1)}


def period_step(unit: str, n: int = 1) -> timedelta | relativedelta:
    # Days and weeks as timedelta: adding a relativedelta cost 20 µs, a tenth of a small
    # query that lists a month of day buckets twice.
    if unit in _DAYS:
        return timedelta(days=n * _DAYS[unit])
    keyword, multiple = _STEPS[unit]
    return relativedelta(**{keyword: n * multiple})


def period(unit: str, anchor: datetime, clock: Clock) -> Span:
    """The `unit` period (second, minute, hour, day, ... year) that contains the local
    time `anchor`."""
    if unit in _CLOCK_UNITS:
        local = anchor.replace(microsecond=0)
        if unit in ("hour", "minute"):
            local = local.replace(second=0)
        if unit == "hour":
            local = local.replace(minute=0)
        start = clock.utc(local)
        return Span(start, start + _CLOCK_UNITS[unit])
    first = period_start(unit, anchor.date(), clock.week_start)
    return Span(clock.midnight(first), clock.midnight(first + period_step(unit)))


def shifted(amount: int, unit_letter: str, clock: Clock) -> datetime:
    """Local now moved back by an offset such as -3m (months) or -6h (hours)."""
    unit = UNITS[unit_letter]
    if unit in _CLOCK_UNITS:
        return clock.local(clock.now - _CLOCK_UNITS[unit] * amount)
    return clock.local_now - period_step(unit, amount)


def bfcm(year: int, clock: Clock) -> Span:
    """Black Friday to Cyber Monday: the Friday after the fourth Thursday of November,
    through the following Monday."""
    first = date(year, 11, 1)
    thanksgiving = first + timedelta(days=(3 - first.weekday()) % 7 + 21)
    friday = thanksgiving + timedelta(days=1)
    return Span(clock.midnight(friday), clock.midnight(friday + timedelta(days=4)))


def resolve_point(point: ast.DatePoint, clock: Clock) -> Span:
    """The period or instant a SINCE / UNTIL / DURING / COMPARE TO operand names. Raises
    DateError when it is unknown or reaches outside Quarry's calendar."""
    what = f"offset {point.text}" if point.kind == "offset" else point.text
    try:
        span = _resolve(point, clock)
    except DateError:
        raise
    except (OverflowError, ValueError) as exc:
        # Calendar arithmetic past year 1 or 9999 (a huge offset, bfcm0000).
        raise out_of_range(what) from exc
    _in_calendar(span.start, span.end, what)
    return span


def _resolve(point: ast.DatePoint, clock: Clock) -> Span:
    kind = point.kind
    if kind == "date":
        assert isinstance(point.value, date)
        day = point.value
        return Span(clock.midnight(day), clock.midnight(day + timedelta(days=1)))
    if kind == "datetime":
        assert isinstance(point.value, datetime)
        value = point.value
        instant = clock.utc(value) if value.tzinfo is None else value.astimezone(UTC)
        return Span(instant, instant, instant=True)
    if kind == "now":
        return Span(clock.now.astimezone(UTC), clock.now.astimezone(UTC), instant=True)
    if kind in ("today", "yesterday"):
        back = 0 if kind == "today" else 1
        return period("day", clock.local_now - timedelta(days=back), clock)
    if kind == "offset":
        return period(UNITS[point.unit], shifted(point.amount, point.unit, clock), clock)
    if kind == "func":
        edge, _, unit = point.name.partition("of")
        span = period(unit, shifted(point.amount, point.unit, clock), clock)
        at = span.start if edge == "start" else span.end
        return Span(at, at, instant=True)
    return named_range(point.name, clock)


def named_range(name: str, clock: Clock) -> Span:
    if name in ("today", "yesterday"):
        back = 0 if name == "today" else 1
        return period("day", clock.local_now - timedelta(days=back), clock)
    edge, _, unit = name.partition("_")
    if unit == "weekend" and edge in ("this", "last"):
        # Saturday and Sunday of this (or last) week; this one ends at the end of today
        # when today is in it, like the other this_* ranges.
        monday = clock.today - timedelta(days=clock.today.weekday())
        saturday = monday + timedelta(days=5) - timedelta(days=7 if edge == "last" else 0)
        end = clock.midnight(saturday + timedelta(days=2))
        if edge == "this":
            end = min(end, clock.midnight(clock.today + timedelta(days=1)))
            if end <= clock.midnight(saturday):
                # Before Saturday this weekend has not begun: the one just gone.
                return named_range("last_weekend", clock)
        return Span(clock.midnight(saturday), end)
    if edge == "this" and unit in PERIODS[1:]:
        # To date: the rest of the period has not happened yet.
        current = period(unit, clock.local_now, clock)
        return Span(current.start, clock.midnight(clock.today + timedelta(days=1)))
    if edge == "last" and unit in PERIODS[1:]:
        return period(unit, clock.local_now - period_step(unit), clock)
    if name.startswith("bfcm") and name[4:].isdigit() and len(name) == 8:
        return bfcm(int(name[4:]), clock)
    hint = did_you_mean(name, [*NAMED_RANGES, f"bfcm{clock.today.year - 1}"])
    raise DateError(f"Unknown date range '{name}'.{hint}")


# ---- windows ----


def main_window(
    since: ast.DatePoint | None,
    until: ast.DatePoint | None,
    during: ast.DatePoint | None,
    clock: Clock,
) -> Window:
    """The query's window. Raises DateError with a user-facing message."""
    tomorrow = clock.midnight(clock.today + timedelta(days=1))
    if during is not None:
        span = resolve_point(during, clock)
        if span.instant:
            raise DateError(
                f"DURING needs a range such as last_month or 2024-01-31, not the instant "
                f"'{during.text}'; use SINCE and UNTIL for instants."
            )
        return _checked(span.start, span.end)
    if since is None and until is None:
        return Window(clock.midnight(clock.today - timedelta(days=29)), tomorrow)
    lt = resolve_point(until, clock).end if until is not None else tomorrow
    if since is not None:
        gte = resolve_point(since, clock).start
    else:
        last_day = clock.local(lt - timedelta(microseconds=1)).date()
        gte = clock.midnight(last_day - timedelta(days=29))
    return _checked(gte, lt)


def _checked(gte: datetime, lt: datetime) -> Window:
    # An operand alone may fit while the window it implies does not (UNTIL 0002-01-05
    # starts 30 days earlier).
    _in_calendar(gte, lt, f"The window from {iso_utc(gte)} to {iso_utc(lt)}")
    if gte >= lt:
        raise DateError(
            f"The window is empty: its end ({iso_utc(lt)}) is not after its start ({iso_utc(gte)})."
        )
    return Window(gte, lt)


def _day_aligned(window: Window, clock: Clock) -> bool:
    return all(clock.local(t).time() == time() for t in (window.gte, window.lt))


def _same_length_from(start: datetime, main: Window, clock: Clock) -> Window:
    """A window beginning at `start` as long as `main`: the same number of local days
    when `main` is made of whole days (so DST does not shift it), else the same duration."""
    if _day_aligned(main, clock) and clock.local(start).time() == time():
        days = (clock.local(main.lt).date() - clock.local(main.gte).date()).days
        first = clock.local(start).date()
        return Window(start, clock.midnight(first + timedelta(days=days)))
    return Window(start, start + (main.lt - main.gte))


def comparison_window(item: ast.CompareItem, main: Window, clock: Clock) -> Window:
    """The window a COMPARE TO item names, relative to the main window. Raises DateError
    when it cannot be resolved or reaches outside Quarry's calendar."""
    try:
        window = _comparison_window(item, main, clock)
    except DateError:
        raise
    except (OverflowError, ValueError) as exc:
        # previous_period of a window thousands of years long steps past year 1.
        raise out_of_range(f"COMPARE TO {item.text}") from exc
    _in_calendar(window.gte, window.lt, f"COMPARE TO {item.text}")
    return window


def _comparison_window(item: ast.CompareItem, main: Window, clock: Clock) -> Window:
    lo, hi = clock.local(main.gte), clock.local(main.lt)
    if item.keyword == "previous_period":
        if _day_aligned(main, clock):
            if lo.day == 1 and hi.day == 1:
                months = (hi.year - lo.year) * 12 + hi.month - lo.month
                step = relativedelta(months=months)
            else:
                step = relativedelta(days=(hi.date() - lo.date()).days)
            return Window(clock.utc(lo - step), main.gte)
        return Window(main.gte - (main.lt - main.gte), main.gte)
    if item.keyword == "previous_year":
        year = relativedelta(years=1)
        return Window(clock.utc(lo - year), clock.utc(hi - year))
    if item.keyword == "previous_year_match_day_of_week":
        weeks = timedelta(days=364)
        return Window(clock.utc(lo - weeks), clock.utc(hi - weeks))
    if item.keyword is not None and item.keyword.startswith("previous_"):
        # previous_quarter ... previous_second: the window moved back by one such unit,
        # on local dates for days and longer, on the UTC timeline below a day.
        unit = item.keyword.removeprefix("previous_")
        if unit in _CLOCK_UNITS:
            step = _CLOCK_UNITS[unit]
            return Window(main.gte - step, main.lt - step)
        back = period_step(unit)
        return Window(clock.utc(lo - back), clock.utc(hi - back))
    assert item.start is not None
    start = resolve_point(item.start, clock)
    if item.end is not None:
        return _checked(start.start, resolve_point(item.end, clock).end)
    if item.start.kind in ("date", "datetime") or start.instant:
        return _same_length_from(start.start, main, clock)
    return _checked(start.start, start.end)


# ---- buckets ----

TIME_GRANULARITIES = (
    "second",
    "minute",
    "hour",
    "day",
    "week",
    "month",
    "quarter",
    "year",
    "hour_of_day",
    "day_of_week",
    "week_of_year",
    "month_of_year",
)
CYCLIC_GRANULARITIES = ("hour_of_day", "day_of_week", "week_of_year", "month_of_year")


_CYCLES = {"hour_of_day": 24, "day_of_week": 7, "week_of_year": 53, "month_of_year": 12}


def _first_bucket(granularity: str, window: Window, clock: Clock) -> datetime | date:
    """The bucket the window starts in: a UTC instant for hours, minutes and seconds, else
    a local first day."""
    if granularity in _CLOCK_UNITS:
        return period(granularity, clock.local(window.gte), clock).start
    return period_start(granularity, clock.local(window.gte).date(), clock.week_start)


def _steps(granularity: str, first: datetime | date, bucket: object) -> int | None:
    """How many buckets of `granularity` lie from `first` to `bucket`, or None when
    `bucket` is not a bucket start of that grid."""
    if granularity in _CLOCK_UNITS:
        assert isinstance(first, datetime)
        if not isinstance(bucket, datetime) or bucket.tzinfo is None:
            return None
        steps, remainder = divmod(bucket - first, _CLOCK_UNITS[granularity])
        return None if remainder else steps
    if isinstance(bucket, datetime):
        bucket = bucket.date()
    if not isinstance(bucket, date) or isinstance(first, datetime):
        return None
    if granularity in ("day", "week"):
        days, spare = divmod((bucket - first).days, 1 if granularity == "day" else 7)
        return None if spare else days
    if bucket.day != 1:
        return None
    months = (bucket.year - first.year) * 12 + bucket.month - first.month
    count, spare = divmod(months, {"month": 1, "quarter": 3, "year": 12}[granularity])
    return None if spare else count


def bucket_count(granularity: str, window: Window, clock: Clock) -> int:
    """len(buckets(granularity, window, clock)), by arithmetic: a window thousands of years
    long must be measured (and refused) without listing millions of hours."""
    if granularity in _CYCLES:
        return _CYCLES[granularity]
    first = _first_bucket(granularity, window, clock)
    if granularity in _CLOCK_UNITS:
        assert isinstance(first, datetime)
        # ceiling: a last, partial hour (minute, second) counts
        return -((first - window.lt) // _CLOCK_UNITS[granularity])
    last_day = clock.local(window.lt - timedelta(microseconds=1)).date()
    last = period_start(granularity, last_day, clock.week_start)
    steps = _steps(granularity, first, last)
    assert steps is not None
    return steps + 1


def bucket_position(granularity: str, window: Window, bucket: object, clock: Clock) -> int:
    """Where a bucket of hour ... year stands in buckets(granularity, window, clock), by
    arithmetic (a comparison window may be far longer than the main one). Raises KeyError
    when it is not one of them, as a lookup in that list would."""
    steps = _steps(granularity, _first_bucket(granularity, window, clock), bucket)
    if steps is None or not 0 <= steps < bucket_count(granularity, window, clock):
        raise KeyError(bucket)
    return steps


def buckets(granularity: str, window: Window, clock: Clock) -> list[object]:
    """Every bucket key of `granularity` that overlaps the window, in order: UTC instants
    for hours, first days (dates) for day to year, numbers for the cyclic ones."""
    return list(iter_buckets(granularity, window, clock))


def first_buckets(granularity: str, window: Window, clock: Clock, count: int) -> Window:
    """The part of `window` its first `count` buckets of hour ... year cover: a page of a
    long TIMESERIES reads the events of the buckets it shows, not the whole window's."""
    for k, bucket in enumerate(iter_buckets(granularity, window, clock)):
        if k == count:
            start = bucket if isinstance(bucket, datetime) else clock.midnight(bucket)  # type: ignore[arg-type]
            return Window(window.gte, min(start, window.lt))
    return window


def iter_buckets(granularity: str, window: Window, clock: Clock) -> Iterator[object]:
    """buckets(), one at a time: a page of a long TIMESERIES lists only the buckets it
    shows."""
    if granularity == "hour_of_day":
        yield from range(24)
    elif granularity == "day_of_week":
        yield from ((clock.week_start + k) % 7 + 1 for k in range(7))  # ISO 1 = Monday
    elif granularity == "month_of_year":
        yield from range(1, 13)
    elif granularity == "week_of_year":
        yield from range(1, 54)  # ISO weeks
    else:
        first = _first_bucket(granularity, window, clock)
        if isinstance(first, datetime):
            at = first
            while at < window.lt:
                yield at
                at += _CLOCK_UNITS[granularity]
            return
        day, step = first, period_step(granularity)
        while clock.midnight(day) < window.lt:
            yield day
            day = day + step
