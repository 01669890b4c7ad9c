"""CSV written by DuckDB's COPY (exports.files.csv_copy) against the value-by-value CsvWriter
over the same rows: the bytes must be identical for every column type DuckDB formats,
the hostile demo values and every option; what it cannot format exactly it declines."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import pairwise
from pathlib import Path
from zoneinfo import ZoneInfo

import duckdb
import pyarrow as pa
import pytest

from exports.configs.options import FormatOptions
from exports.files.csv_arrow import parse_date_format
from exports.files.csv_copy import CopySource, copy_csv, zone_offsets
from exports.files.neutralise import FORMULA_TRIGGERS
from tests.exports.test_csv_arrow import OPTIONS, _old, _table
from warehouse.sql_values import bind

# The Python-only types of the shared table: floats and lists (and nanoseconds, below).
UNSUPPORTED = ("ratio", "tags")


def _connection(table: pa.Table) -> duckdb.DuckDBPyConnection:
    connection = duckdb.connect()
    # A session zone unlike every configured one: formatting must not depend on it.
    connection.execute("SET TimeZone = 'America/Sao_Paulo'")
    # An index column keeps the oracle's row order through the COPY's ORDER BY.
    connection.register("source", table.append_column("n", pa.array(range(table.num_rows))))
    return connection


def _copy(
    connection: duckdb.DuckDBPyConnection,
    names: list[str],
    options: FormatOptions,
    path: Path,
    where: str = "TRUE",
    params: tuple[object, ...] = (),
) -> bytes | None:
    source = CopySource(
        columns=[f'"{n}"' for n in names],
        from_where=f"FROM source WHERE {bind(where, params)}",
        order_by='"n"',
    )
    rows = copy_csv(connection, source, names, options, path)
    return None if rows is None else path.read_bytes()


def _supported() -> pa.Table:
    table = _table()
    return table.select([n for n in table.column_names if n not in UNSUPPORTED])


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: repr(o.to_json()))
def test_every_supported_column_is_byte_identical(options: FormatOptions, tmp_path: Path) -> None:
    table = _supported()
    written = _copy(_connection(table), table.column_names, options, tmp_path / "out.csv")
    if parse_date_format(options.date_format) is None:
        # Locale-dependent or platform-defined directives: the Python path decides.
        assert written is None
    else:
        assert written == _old(table, options)


@pytest.mark.parametrize("options", OPTIONS[:4], ids=lambda o: repr(o.to_json()))
def test_each_column_alone_is_byte_identical(options: FormatOptions, tmp_path: Path) -> None:
    # One column per row is where csv.writer writes `""` for an empty field.
    table = _supported()
    connection = _connection(table)
    for name in table.column_names:
        written = _copy(connection, [name], options, tmp_path / f"{name}.csv")
        assert written == _old(table.select([name]), options), name


def test_each_ascii_character_anywhere_is_quoted_as_csv_writer_does(tmp_path: Path) -> None:
    # DuckDB once quoted every field holding "#" (its comment character).
    texts = [f"{c}x" for c in map(chr, range(32, 127))]
    texts += [f"x{c}y" for c in map(chr, range(32, 127))] + [
        f"x{c}" for c in map(chr, range(32, 127))
    ]
    table = pa.table({"a": texts, "b": ["b"] * len(texts)})
    for options in OPTIONS[:4]:
        written = _copy(_connection(table), ["a", "b"], options, tmp_path / "out.csv")
        assert written == _old(table, options), options


def test_filters_are_bound_parameters(tmp_path: Path) -> None:
    table = _supported()
    hostile = "x' OR TRUE --"
    written = _copy(
        _connection(table), ["text", "money"], FormatOptions(), tmp_path / "out.csv",
        where='"text" = ? OR "small" < ?', params=(hostile, 3),
    )  # fmt: skip
    assert written == _old(table.select(["text", "money"]).slice(0, 3), FormatOptions())


def test_no_rows_write_the_header_alone(tmp_path: Path) -> None:
    table = _supported()
    options = FormatOptions(delimiter=";", bom=True)
    written = _copy(_connection(table), ["text", "at"], options, tmp_path / "out.csv", "FALSE")
    assert written == _old(table.select(["text", "at"]).slice(0, 0), options)
    assert written == "\ufefftext;at\r\n".encode()


@pytest.mark.parametrize("name", UNSUPPORTED)
def test_python_only_types_are_declined(name: str, tmp_path: Path) -> None:
    table = _table()
    assert _copy(_connection(table), ["text", name], FormatOptions(), tmp_path / "o.csv") is None


def test_years_outside_four_digits_are_declined(tmp_path: Path) -> None:
    # The C library does not pad %Y below 1000: the COPY stops and the caller falls back.
    table = pa.table(
        {"at": pa.array([datetime(2024, 1, 2, tzinfo=UTC), datetime(999, 1, 2, tzinfo=UTC)])}
    )
    assert _copy(_connection(table), ["at"], FormatOptions(), tmp_path / "o.csv") is None


@pytest.mark.parametrize("zone", ["UTC", "America/New_York"])
def test_years_past_python_datetimes_are_declined(zone: str, tmp_path: Path) -> None:
    # About year 11476: Arrow and DuckDB hold it, Python's datetime does not.
    micros = [int(datetime(2024, 1, 2, tzinfo=UTC).timestamp()) * 1_000_000, 3 * 10**17]
    table = pa.table({"at": pa.array(micros, pa.timestamp("us", tz="UTC"))})
    options = FormatOptions(time_zone=zone)
    assert _copy(_connection(table), ["at"], options, tmp_path / "o.csv") is None


ZONES = ["America/New_York", "Australia/Lord_Howe", "Asia/Kathmandu", "Europe/London",
         "Pacific/Chatham", "Asia/Tokyo", "UTC"]  # fmt: skip


def _around_transitions(zone: str) -> list[datetime]:
    """Instants of 2023-2024 every 7 hours and 13 minutes, and each second around the
    zone's changes of offset in those years."""
    start = datetime(2023, 1, 1, tzinfo=UTC)
    values = [start + timedelta(minutes=433 * i) for i in range(2 * 365 * 24 * 60 // 433)]
    info = ZoneInfo(zone)
    changes = [
        a
        for a, b in pairwise(values)
        if a.astimezone(info).utcoffset() != b.astimezone(info).utcoffset()
    ]
    for before in changes:
        second = before
        while second.astimezone(info).utcoffset() == before.astimezone(info).utcoffset():
            second += timedelta(seconds=1)
        values += [second + timedelta(seconds=d) for d in (-2, -1, 0, 1)]
    return sorted(values)


@pytest.mark.parametrize("zone", ZONES)
def test_wall_clock_times_are_those_of_zoneinfo(zone: str, tmp_path: Path) -> None:
    # Offsets of 30 and 45 minutes, a 30-minute DST shift (Lord Howe), no DST (Tokyo).
    table = pa.table({"at": pa.array(_around_transitions(zone), pa.timestamp("us", tz="UTC"))})
    options = FormatOptions(date_format="%Y-%m-%d %H:%M:%S", time_zone=zone)
    written = _copy(_connection(table), ["at"], options, tmp_path / "o.csv")
    assert written == _old(table, options)


def test_zone_offsets_list_each_change_in_the_range() -> None:
    zone = ZoneInfo("America/New_York")
    micros = [
        int(datetime(2024, m, d, tzinfo=UTC).timestamp()) * 1_000_000 for m, d in ((1, 1), (12, 31))
    ]
    offsets = zone_offsets(zone, *micros)
    hour = 3_600_000_000
    changes = [datetime(2024, 3, 10, 7, tzinfo=UTC), datetime(2024, 11, 3, 6, tzinfo=UTC)]
    assert offsets == [
        (int(datetime(2024, 1, 1, tzinfo=UTC).timestamp()) * 1_000_000, -5 * hour),
        (int(changes[0].timestamp()) * 1_000_000, -4 * hour),
        (int(changes[1].timestamp()) * 1_000_000, -5 * hour),
    ]


def test_every_formula_trigger_sorts_below_the_gate_of_the_sql_text() -> None:
    # csv_copy._text passes text at or above 'A' without looking for a trigger.
    assert all(trigger < "A" for trigger in FORMULA_TRIGGERS)
