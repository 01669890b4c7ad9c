"""Which zones and windows let hour and store-day buckets answer exactly, from tzdata."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

from warehouse.query.dates import Window
from warehouse.rollups.exactness import changes, days_exact, hours_exact


def _days(zone: str, first: date, last: date) -> Window:
    tz = ZoneInfo(zone)
    start = datetime(first.year, first.month, first.day, tzinfo=tz).astimezone(UTC)
    end = last + timedelta(days=1)
    return Window(start, datetime(end.year, end.month, end.day, tzinfo=tz).astimezone(UTC))


def test_hours_answer_whole_hour_zones_across_dst() -> None:
    assert hours_exact(
        "America/New_York", [_days("America/New_York", date(2025, 3, 1), date(2025, 3, 31))]
    )
    assert hours_exact(
        "Europe/Berlin", [_days("Europe/Berlin", date(2024, 10, 1), date(2024, 11, 30))]
    )


def test_hours_do_not_answer_odd_offsets_while_they_last() -> None:
    # Caracas was -4:30 until 2016-05-01 02:30 local, -4:00 after.
    before = _days("America/Caracas", date(2016, 4, 1), date(2016, 4, 20))
    after = _days("America/Caracas", date(2016, 6, 1), date(2016, 6, 30))
    assert not hours_exact("America/Caracas", [before])
    assert hours_exact("America/Caracas", [after])
    # A comparison window in the odd era is enough to need the facts.
    assert not hours_exact("America/Caracas", [after, before])
    assert not hours_exact(
        "Asia/Kathmandu", [_days("Asia/Kathmandu", date(2025, 1, 1), date(2025, 1, 31))]
    )

    # Lord Howe: +11 in its summer (whole hours), +10:30 in its winter, moving at DST.
    def lord_howe(first: date, last: date) -> bool:
        return hours_exact("Australia/Lord_Howe", [_days("Australia/Lord_Howe", first, last)])

    assert lord_howe(date(2025, 1, 1), date(2025, 1, 31))
    assert not lord_howe(date(2025, 3, 20), date(2025, 4, 20))
    assert not lord_howe(date(2025, 7, 1), date(2025, 7, 31))


def test_lord_howe_moves_by_half_an_hour() -> None:
    zone = ZoneInfo("Australia/Lord_Howe")
    steps = changes(zone, datetime(2024, 9, 1, tzinfo=UTC), datetime(2024, 11, 1, tzinfo=UTC))
    assert [offset for _, offset in steps] == [timedelta(hours=10, minutes=30), timedelta(hours=11)]
    at = steps[1][0]
    assert at.astimezone(zone).utcoffset() == timedelta(hours=11)
    assert (at - timedelta(seconds=1)).astimezone(zone).utcoffset() == timedelta(
        hours=10, minutes=30
    )


def test_store_days_answer_the_stores_own_zone_only() -> None:
    may = _days("Asia/Kathmandu", date(2025, 5, 1), date(2025, 5, 31))
    assert days_exact("Asia/Kathmandu", {"Asia/Kathmandu"}, [may])
    assert not days_exact("Asia/Kathmandu", {"Asia/Kathmandu", "Asia/Kolkata"}, [may])
    # Zones with the same offsets all along agree (Berlin and Paris), else not.
    march = _days("Europe/Berlin", date(2025, 3, 1), date(2025, 3, 20))
    assert days_exact("Europe/Berlin", {"Europe/Paris"}, [march])
    assert not days_exact("Europe/Berlin", {"Europe/London"}, [march])
    # Window ends that are not the zone's midnights, or next to an offset change.
    assert not days_exact(
        "Europe/Berlin", {"Europe/Berlin"}, [_days("UTC", date(2025, 3, 1), date(2025, 3, 20))]
    )
    assert not days_exact(
        "Europe/Berlin",
        {"Europe/Berlin"},
        [_days("Europe/Berlin", date(2025, 3, 1), date(2025, 3, 30))],
    )
