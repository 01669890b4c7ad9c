"""Window resolution in a zone: offsets, named ranges, functions, DST, comparisons."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from warehouse.query.dates import (
    EARLIEST,
    LATEST,
    Clock,
    DateError,
    Window,
    bucket_count,
    bucket_position,
    buckets,
    comparison_window,
    main_window,
)
from warehouse.query.parser import parse

NY = ZoneInfo("America/New_York")
BERLIN = ZoneInfo("Europe/Berlin")
# Tuesday 2024-11-05, 10:00 in New York.
CLOCK = Clock(datetime(2024, 11, 5, 15, 0, tzinfo=UTC), NY)


def window(clauses: str, clock: Clock = CLOCK) -> tuple[str, str]:
    q, errors = parse(f"FROM sales SHOW total_sales {clauses}")
    assert not errors
    w = main_window(q.since, q.until, q.during, clock)
    return w.public()["gte"], w.public()["lt"]


@pytest.mark.parametrize(
    ("clauses", "gte", "lt"),
    [
        # No date clause: the last 30 days including today.
        ("", "2024-10-07T04:00:00Z", "2024-11-06T05:00:00Z"),
        ("SINCE -30d", "2024-10-06T04:00:00Z", "2024-11-06T05:00:00Z"),
        ("SINCE -3m", "2024-08-01T04:00:00Z", "2024-11-06T05:00:00Z"),
        ("SINCE -1q UNTIL -1q", "2024-07-01T04:00:00Z", "2024-10-01T04:00:00Z"),
        ("SINCE -1y UNTIL -1y", "2023-01-01T05:00:00Z", "2024-01-01T05:00:00Z"),
        ("SINCE -2w UNTIL -1w", "2024-10-21T04:00:00Z", "2024-11-04T05:00:00Z"),
        ("SINCE -6h", "2024-11-05T09:00:00Z", "2024-11-06T05:00:00Z"),
        ("DURING today", "2024-11-05T05:00:00Z", "2024-11-06T05:00:00Z"),
        ("DURING yesterday", "2024-11-04T05:00:00Z", "2024-11-05T05:00:00Z"),
        ("DURING last_week", "2024-10-28T04:00:00Z", "2024-11-04T05:00:00Z"),
        ("DURING this_week", "2024-11-04T05:00:00Z", "2024-11-06T05:00:00Z"),
        ("DURING last_month", "2024-10-01T04:00:00Z", "2024-11-01T04:00:00Z"),
        ("DURING this_quarter", "2024-10-01T04:00:00Z", "2024-11-06T05:00:00Z"),
        ("DURING last_year", "2023-01-01T05:00:00Z", "2024-01-01T05:00:00Z"),
        ("DURING bfcm2023", "2023-11-24T05:00:00Z", "2023-11-28T05:00:00Z"),
        ("DURING bfcm2024", "2024-11-29T05:00:00Z", "2024-12-03T05:00:00Z"),
        # A date in UNTIL includes its whole day; a timestamp or now is an exclusive end.
        ("SINCE 2024-03-10 UNTIL 2024-03-10", "2024-03-10T05:00:00Z", "2024-03-11T04:00:00Z"),
        (
            "SINCE 2024-03-01T08:00:00 UNTIL 2024-03-01T09:30:00",
            "2024-03-01T13:00:00Z",
            "2024-03-01T14:30:00Z",
        ),
        ("SINCE 2024-11-05T00:00:00Z UNTIL now", "2024-11-05T00:00:00Z", "2024-11-05T15:00:00Z"),
        (
            "SINCE startOfMonth(-1m) UNTIL endOfMonth(-1m)",
            "2024-10-01T04:00:00Z",
            "2024-11-01T04:00:00Z",
        ),
        ("SINCE startOfYear UNTIL startOfDay", "2024-01-01T05:00:00Z", "2024-11-05T05:00:00Z"),
        ("SINCE '2024-01-01' UNTIL '2024-01-31'", "2024-01-01T05:00:00Z", "2024-02-01T05:00:00Z"),
        ("UNTIL 2024-10-31", "2024-10-02T04:00:00Z", "2024-11-01T04:00:00Z"),
    ],
)
def test_windows_in_new_york(clauses: str, gte: str, lt: str) -> None:
    assert window(clauses) == (gte, lt)


def test_week_start_sunday() -> None:
    clock = Clock(CLOCK.now, NY, week_start=6)
    assert window("DURING last_week", clock) == ("2024-10-27T04:00:00Z", "2024-11-03T04:00:00Z")


def test_berlin_dst_day_is_23_hours() -> None:
    clock = Clock(datetime(2024, 4, 2, tzinfo=UTC), BERLIN)
    assert window("DURING 2024-03-31", clock) == ("2024-03-30T23:00:00Z", "2024-03-31T22:00:00Z")


@pytest.mark.parametrize(
    ("clauses", "message"),
    [
        ("SINCE 2024-02-01 UNTIL 2024-01-01", "The window is empty"),
        ("DURING now", "DURING needs a range"),
        ("DURING last_monht", "Did you mean 'last_month'?"),
        # Outside the calendar (0002 to 9998): a message, never OverflowError/ValueError.
        ("SINCE -999999999d", r"^offset -999999999d is out of range \(dates run from 0002"),
        ("SINCE -99999999h", "offset -99999999h is out of range"),
        ("SINCE -8000y", "offset -8000y is out of range"),
        ("SINCE startOfMonth(-99999m)", r"^startOfMonth\(-99999m\) is out of range"),
        ("UNTIL endOfYear(-2024y)", r"endOfYear\(-2024y\) is out of range"),
        ("DURING bfcm0000", "bfcm0000 is out of range"),
        ("DURING bfcm9999", "bfcm9999 is out of range"),
        ("SINCE 9998-12-31T23:00:00-05:00", "9998-12-31T23:00:00-05:00 is out of range"),
        # Each operand fits, the 30 days before the end do not (New York kept its local mean
        # time then, -4:56:02).
        ("UNTIL 0002-01-05", "The window from 0001-12-07T04:56:02Z to 0002-01-06T04:56:02Z is"),
    ],
)
def test_bad_windows(clauses: str, message: str) -> None:
    with pytest.raises(DateError, match=message):
        window(clauses)


def compare(clauses: str, item: str) -> tuple[str, str]:
    q, _ = parse(f"FROM sales SHOW total_sales {clauses} COMPARE TO {item}")
    main = main_window(q.since, q.until, q.during, CLOCK)
    return comparison_window(q.compare[0], main, CLOCK).public()["gte"], comparison_window(
        q.compare[0], main, CLOCK
    ).public()["lt"]


@pytest.mark.parametrize(
    ("clauses", "item", "gte", "lt"),
    [
        # A month compares with the previous month, not the previous 31 days.
        ("DURING last_month", "previous_period", "2024-09-01T04:00:00Z", "2024-10-01T04:00:00Z"),
        # Seven local days before a week that crosses the DST change.
        (
            "SINCE 2024-11-03 UNTIL 2024-11-09",
            "previous_period",
            "2024-10-27T04:00:00Z",
            "2024-11-03T04:00:00Z",
        ),
        ("DURING last_month", "previous_year", "2023-10-01T04:00:00Z", "2023-11-01T04:00:00Z"),
        (
            "SINCE 2024-11-04 UNTIL 2024-11-10",
            "previous_year_match_day_of_week",
            "2023-11-06T05:00:00Z",
            "2023-11-13T05:00:00Z",
        ),
        ("DURING last_month", "2023-02-01", "2023-02-01T05:00:00Z", "2023-03-04T05:00:00Z"),
        ("DURING last_month", "last_year", "2023-01-01T05:00:00Z", "2024-01-01T05:00:00Z"),
        (
            "DURING last_month",
            "2024-01-01 UNTIL 2024-01-07",
            "2024-01-01T05:00:00Z",
            "2024-01-08T05:00:00Z",
        ),
    ],
)
def test_comparison_windows(clauses: str, item: str, gte: str, lt: str) -> None:
    assert compare(clauses, item) == (gte, lt)


def test_the_calendar_edges_resolve() -> None:
    utc = Clock(CLOCK.now, ZoneInfo("UTC"))
    assert window("SINCE 0002-01-01 UNTIL 9998-12-31", utc) == (
        "0002-01-01T00:00:00Z",
        "9999-01-01T00:00:00Z",
    )
    # Tokyo's midnight of the first day is still the previous day in UTC: out of range.
    with pytest.raises(DateError, match="0002-01-01 is out of range"):
        window("SINCE 0002-01-01", Clock(CLOCK.now, ZoneInfo("Asia/Tokyo")))


@pytest.mark.parametrize(
    ("clauses", "item", "message"),
    [
        ("SINCE 0002-03-01 UNTIL 0002-03-31", "previous_year", "COMPARE TO previous_year is out"),
        ("SINCE 0003-01-01 UNTIL 9000-01-01", "previous_period", "COMPARE TO previous_period is"),
        (
            "DURING last_month",
            "previous_year_match_day_of_week",
            None,
        ),
        ("DURING last_month", "-999999w", "offset -999999w is out of range"),
    ],
)
def test_comparisons_outside_the_calendar(clauses: str, item: str, message: str | None) -> None:
    if message is None:  # the control: an ordinary comparison still resolves
        compare(clauses, item)
        return
    with pytest.raises(DateError, match=message):
        compare(clauses, item)


def test_buckets_reach_the_last_year() -> None:
    utc = Clock(CLOCK.now, ZoneInfo("UTC"))
    q, _ = parse("FROM sales SHOW total_sales SINCE 9998-06-01 UNTIL 9998-12-31")
    main = main_window(q.since, q.until, q.during, utc)
    assert [str(b) for b in buckets("year", main, utc)] == ["9998-01-01"]
    assert len(buckets("month", main, utc)) == 7


def test_hour_buckets_across_fall_back_have_25_hours() -> None:
    q, _ = parse("FROM sales SHOW total_sales DURING 2024-11-03")
    main = main_window(q.since, q.until, q.during, CLOCK)
    hours = buckets("hour", main, CLOCK)
    assert len(hours) == 25
    assert [h.astimezone(NY).isoformat() for h in hours[1:3]] == [  # type: ignore[union-attr]
        "2024-11-03T01:00:00-04:00",
        "2024-11-03T01:00:00-05:00",
    ]


def test_week_buckets_start_on_week_start() -> None:
    q, _ = parse("FROM sales SHOW total_sales SINCE 2024-10-02 UNTIL 2024-10-20")
    main = main_window(q.since, q.until, q.during, CLOCK)
    assert [str(b) for b in buckets("week", main, CLOCK)] == [
        "2024-09-30",
        "2024-10-07",
        "2024-10-14",
    ]
    sunday = Clock(CLOCK.now, NY, week_start=6)
    assert [str(b) for b in buckets("week", main, sunday)] == [
        "2024-09-29",
        "2024-10-06",
        "2024-10-13",
        "2024-10-20",
    ]


LORD_HOWE = ZoneInfo("Australia/Lord_Howe")  # DST moves the clock by half an hour
GRANULARITIES = ("hour", "day", "week", "month", "quarter", "year")


@pytest.mark.parametrize("granularity", GRANULARITIES)
@pytest.mark.parametrize(
    ("zone", "gte", "lt"),
    [
        (NY, datetime(2024, 11, 3, 4), datetime(2024, 11, 4, 5)),  # fall back: 25 hours
        (NY, datetime(2024, 3, 10, 5), datetime(2024, 3, 11, 4)),  # spring forward: 23
        (NY, datetime(2024, 2, 27, 13, 30), datetime(2024, 3, 2, 0, 15)),  # partial ends
        (BERLIN, datetime(2023, 12, 31, 23), datetime(2025, 2, 3, 23)),
        (LORD_HOWE, datetime(2024, 3, 30), datetime(2024, 4, 14, 9)),
        (ZoneInfo("UTC"), datetime(2023, 10, 2), datetime(2023, 10, 2, 0, 0, 1)),
    ],
)
@pytest.mark.parametrize("week_start", [0, 6])
def test_bucket_count_and_position_agree_with_the_list(
    granularity: str, zone: ZoneInfo, gte: datetime, lt: datetime, week_start: int
) -> None:
    clock = Clock(CLOCK.now, zone, week_start)
    main = Window(gte.replace(tzinfo=UTC), lt.replace(tzinfo=UTC))
    listed = buckets(granularity, main, clock)
    assert bucket_count(granularity, main, clock) == len(listed)
    for k, bucket in enumerate(listed):
        assert bucket_position(granularity, main, bucket, clock) == k


@pytest.mark.parametrize(
    ("granularity", "bucket"),
    [
        ("hour", datetime(2024, 11, 3, 3, tzinfo=UTC)),  # the hour before the window
        ("hour", datetime(2024, 11, 4, 5, tzinfo=UTC)),  # the hour after it
        ("hour", datetime(2024, 11, 3, 10, 30, tzinfo=UTC)),  # not an hour start
        ("day", date(2024, 11, 4)),
        ("week", date(2024, 10, 29)),  # a Tuesday
        ("month", date(2024, 11, 2)),
        ("quarter", date(2024, 11, 1)),
        ("year", date(2023, 1, 1)),
    ],
)
def test_bucket_position_of_a_bucket_outside_the_window_is_a_key_error(
    granularity: str, bucket: object
) -> None:
    main = Window(datetime(2024, 11, 3, 4, tzinfo=UTC), datetime(2024, 11, 4, 5, tzinfo=UTC))
    with pytest.raises(KeyError):
        bucket_position(granularity, main, bucket, CLOCK)


def test_bucket_count_of_the_whole_calendar_is_arithmetic() -> None:
    utc = Clock(CLOCK.now, ZoneInfo("UTC"))
    everything = Window(EARLIEST, LATEST)
    days = (date(9999, 1, 1) - date(2, 1, 1)).days
    # Tens of millions of hours: listing them is what the size check must not do.
    assert bucket_count("hour", everything, utc) == days * 24
    assert bucket_count("day", everything, utc) == days
    assert bucket_count("month", everything, utc) == 9997 * 12
    assert bucket_position("hour", everything, LATEST - timedelta(hours=1), utc) == days * 24 - 1
