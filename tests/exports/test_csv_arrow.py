"""The vectorised CSV path (CsvWriter.batches over Arrow) against the value-by-value path
(CsvWriter.rows over the same values in Python): the old formatter is the oracle, and the
bytes must be identical for every column type, the hostile demo values, and the options."""

from __future__ import annotations

import io
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import duckdb
import pyarrow as pa
import pytest

from exports.configs.options import FormatOptions
from exports.files.csv_arrow import parse_date_format
from exports.files.csv_writer import CsvWriter
from platforms.demo.hostile import HOSTILE_VALUES, LONG_VALUES

TEXTS = [v.text for v in HOSTILE_VALUES + LONG_VALUES] + [
    "-12.30", "+5", "-1\n", "+1.", "-.5", "=", "'=x", "plain", "-", "\uff11\uff12",
]  # fmt: skip

OPTIONS = [
    FormatOptions(),
    FormatOptions(delimiter=";"),
    FormatOptions(delimiter="\t", bom=True),
    FormatOptions(delimiter="|", time_zone="Asia/Tokyo"),
    FormatOptions(date_format="%Y-%m-%dT%H:%M:%S.%fZ"),
    FormatOptions(date_format="%d/%m/%y %H.%M 100%%", time_zone="America/New_York"),
    FormatOptions(date_format="no directives", time_zone="Europe/Berlin"),
    # Directives the vectorised path does not compute: the Python fallback.
    FormatOptions(date_format="%b %d %Y %I:%M %p %Z", time_zone="Australia/Lord_Howe"),
    FormatOptions(date_format="%Y-%m-%d %", bom=True),
]


def _times(count: int) -> list[datetime | None]:
    # Across DST changes in both hemispheres, sub-second parts, and a null.
    start = datetime(2023, 3, 10, 23, 59, 59, 999_999, tzinfo=UTC)
    values: list[datetime | None] = [
        start + timedelta(hours=37 * i, microseconds=1_003 * i) for i in range(count)
    ]
    values[3] = None
    return values


def _table() -> pa.Table:
    n = len(TEXTS)
    times = _times(n)
    naive = [t.replace(tzinfo=None) if t else None for t in times]
    return pa.table(
        {
            "text": pa.array([None if i == 5 else t for i, t in enumerate(TEXTS)], pa.string()),
            "large_text": pa.array(TEXTS[::-1], pa.large_string()),
            "money": pa.array(
                [Decimal(i * 137 - 2_000) / 100 if i != 4 else None for i in range(n)],
                pa.decimal128(18, 2),
            ),
            "rate": pa.array(
                [(Decimal(i) / 7).quantize(Decimal("1E-10")) for i in range(n)],
                pa.decimal128(24, 10),
            ),
            "whole": pa.array([Decimal(i - 3) for i in range(n)], pa.decimal128(10, 0)),
            "count": pa.array([i * -1_000_003 if i % 7 else None for i in range(n)], pa.int64()),
            "small": pa.array([i for i in range(n)], pa.int32()),
            "flag": pa.array([None if i % 5 == 0 else i % 2 == 0 for i in range(n)], pa.bool_()),
            "day": pa.array(
                [date(2024, 2, 29) + timedelta(days=i) if i != 2 else None for i in range(n)],
                pa.date32(),
            ),
            "at": pa.array(times, pa.timestamp("us", tz="UTC")),
            "at_tokyo": pa.array(times, pa.timestamp("us", tz="Asia/Tokyo")),
            "at_ms": pa.array(times, pa.timestamp("ms", tz="UTC")),
            "at_s": pa.array(times, pa.timestamp("s", tz="UTC")),
            "local": pa.array(naive, pa.timestamp("us")),
            "ratio": pa.array([i / 3 if i % 4 else float(i) for i in range(n)], pa.float64()),
            "tags": pa.array([["a", "=b"] if i % 2 else None for i in range(n)]),
        }
    )


def _old(table: pa.Table, options: FormatOptions) -> bytes:
    buffer = io.StringIO(newline="")
    writer = CsvWriter(buffer, options)
    writer.header(table.column_names)
    rows = zip(*(c.to_pylist() for c in table.columns), strict=True)
    writer.rows(rows)
    assert writer.rows_written == table.num_rows
    return buffer.getvalue().encode("utf-8")


def _new(table: pa.Table, options: FormatOptions, batch_rows: int = 7) -> bytes:
    buffer = io.StringIO(newline="")
    writer = CsvWriter(buffer, options)
    writer.header(table.column_names)
    writer.batches(table.to_batches(max_chunksize=batch_rows))
    assert writer.rows_written == table.num_rows
    return buffer.getvalue().encode("utf-8")


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: repr(o.to_json()))
def test_every_column_type_is_byte_identical(options: FormatOptions) -> None:
    table = _table()
    assert _new(table, options) == _old(table, options)


@pytest.mark.parametrize("options", OPTIONS[:4], ids=lambda o: repr(o.to_json()))
def test_each_column_alone_is_byte_identical(options: FormatOptions) -> None:
    # One column per row is where csv.writer quotes an empty field ("" not a blank line).
    table = _table()
    for name in table.column_names:
        single = table.select([name])
        assert _new(single, options, batch_rows=5) == _old(single, options), name


def test_duckdb_types_are_byte_identical() -> None:
    # What a record part really reads: DuckDB's Arrow types (TIMESTAMPTZ in the session's
    # zone, DECIMAL, DATE, VARCHAR), including values the Python path must handle.
    connection = duckdb.connect()
    connection.execute("SET TimeZone = 'America/Sao_Paulo'")
    texts = pa.table({"t": pa.array(TEXTS, pa.string())})
    connection.register("texts", texts)
    table = connection.sql(
        """
        SELECT t, (row_number() OVER () * 12.34 - 100)::DECIMAL(18, 2) AS price,
               TIMESTAMPTZ '2024-10-27 00:30:00+00' + (row_number() OVER ()) * INTERVAL 20 MINUTE AS at,
               TIMESTAMP '0999-12-31 23:00:00' + (row_number() OVER ()) * INTERVAL 3 MINUTE AS old,
               DATE '2024-01-01' + (row_number() OVER ())::INTEGER AS day,
               sum(12.5::DECIMAL(18, 2)) OVER () AS total, NULL::VARCHAR AS nothing,
               (row_number() OVER ()) % 3 = 0 AS flag
        FROM texts
        """  # noqa: E501
    ).to_arrow_table()
    for options in OPTIONS:
        assert _new(table, options, batch_rows=11) == _old(table, options), options


def test_years_outside_four_digits_fall_back() -> None:
    # The C library does not pad %Y below 1000: the Python path decides those.
    old = pa.table(
        {"at": pa.array([datetime(999, 1, 2, tzinfo=UTC), None], pa.timestamp("us", tz="UTC"))}
    )
    for options in (FormatOptions(), FormatOptions(time_zone="Asia/Tokyo")):
        assert _new(old, options) == _old(old, options)


def test_nanosecond_timestamps_fall_back() -> None:
    table = pa.table(
        {"at": pa.array([1_700_000_000_123_456_000, None], pa.timestamp("ns", tz="UTC"))}
    )
    assert _new(table, FormatOptions()) == _old(table, FormatOptions())


def test_an_empty_batch_and_no_batches_write_only_the_header() -> None:
    table = _table().slice(0, 0)
    assert _new(table, FormatOptions()) == _old(table, FormatOptions())


def test_only_locale_free_directives_are_vectorised() -> None:
    assert parse_date_format("%Y-%m-%d %H:%M:%S") is not None
    assert parse_date_format("%y%%%f") is not None
    for unsupported in ("%b", "%Z", "%z", "%p", "%c", "%", "x%", "%-d", "a\x00b"):
        assert parse_date_format(unsupported) is None, unsupported
