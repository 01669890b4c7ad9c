"""CSV of a record part written by DuckDB's own COPY, formatted in SQL.

Formatting in Python, even a column at a time with Arrow (exports.files.csv_arrow), cost more
than reading and sorting the rows: a large CSV export spent most of its time moving
batches out of DuckDB to format them. Here DuckDB formats every value in SQL and writes
the file itself, streaming and in parallel, producing exactly the bytes of `CsvWriter`:

- Fields are quoted in SQL (`_quoted`), as `csv.writer` with QUOTE_MINIMAL does: a field
  holding the delimiter, a quote, CR or LF is quoted, with its quotes doubled. DuckDB's own
  quoting is off (QUOTE ''): DuckDB 1.5 also quotes every field holding `#`, whatever its
  COMMENT option says. NULL is written as an empty field, so every empty text becomes
  NULL, except in a one-column file, where `csv.writer` writes `""` for an empty field
  (so the record is not a blank line).
- The header (with the BOM) is the COPY's PREFIX, written by `CsvWriter.header`; the last
  record's line end is its SUFFIX (COPY separates records and leaves the last open).

A column this module cannot format exactly (floats, a date format
with directives beyond csv_arrow's locale-free set, a year outside 1000..9999) makes
`copy_csv` answer None, and the caller writes through CsvWriter; so does a DuckDB memory
limit under COPY_MIN_MEMORY_MIB: COPY's ordered CSV writer needs a few hundred MB whatever
the row count (with less it fails where the Arrow path streams).

A zone-aware timestamp is placed in the configured zone with the offsets of Python's
zoneinfo over the column's range (zone_offsets), as CsvWriter does: cheaper than DuckDB's
timezone(), and the same tz database whatever ICU ships.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import pairwise
from pathlib import Path
from zoneinfo import ZoneInfo

import duckdb

from exports.configs.options import FormatOptions
from exports.files.csv_arrow import parse_date_format
from exports.files.csv_writer import RECORD_END, CsvWriter
from exports.files.neutralise import FORMULA_TRIGGERS
from warehouse.tables import quote_literal

# Raised inside the COPY for a value only the Python path formats right: the COPY is
# abandoned (its file is rewritten by the fallback).
_FALLBACK = "quarry-csv-copy-fallback"
_INTEGERS = {"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT",
             "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT", "UHUGEINT"}  # fmt: skip
_TRIGGERS = ", ".join(str(ord(t)) for t in FORMULA_TRIGGERS)
# How far apart zone_offsets probes a zone: no zone changes its offset twice within six
# hours (changes are months apart; the closest ever, war time and double summer time,
# are weeks apart).
_OFFSET_PROBE_SECONDS = 6 * 3600
# Measured: COPY of 0.75-6M sorted rows with 100-character text ran flat at 256 MB (about
# 330 MB peak RSS) and ran out of memory at 128 MB.
COPY_MIN_MEMORY_MIB = 240
_MEMORY_UNITS = {"bytes": 1 / 1024**2, "KiB": 1 / 1024, "MiB": 1, "GiB": 1024, "TiB": 1024**2}
# Python's datetime range (years 1 to 9999), in epoch seconds, with a day to spare for
# any offset.
_FIRST_SECOND = -62_135_596_800 + 86_400
_LAST_SECOND = 253_402_300_799 - 86_400
_UTC_ZONES = {"UTC", "Etc/UTC", "Etc/UCT", "Etc/Zulu", "Zulu", "UCT", "Universal", "Etc/Universal"}


@dataclass(frozen=True)
class CopySource:
    """A record part as SQL: `columns` (expressions, in header order) selected
    `from_where` (FROM ... WHERE ..., its values written in: warehouse.sql_values), ordered
    by `order_by`."""

    columns: Sequence[str]
    from_where: str
    order_by: str

    def select(self, expressions: Sequence[str]) -> str:
        """SELECT `expressions` over the part's rows, in its order."""
        return f"SELECT {', '.join(expressions)} {self.from_where} ORDER BY {self.order_by}"


def _text(expr: str) -> str:
    # exports.files.neutralise.is_dangerous in SQL, and an empty text as NULL (see the module
    # docstring). Every trigger sorts below 'A' (code points 9 to 64), so one comparison
    # passes most text (names, statuses, ids) as it is; below it, the first character is
    # looked up as a code point, then a plain number stays as it is.
    return (
        f"CASE WHEN {expr} >= 'A' THEN {expr} WHEN {expr} = '' THEN NULL "
        f"WHEN ascii({expr}) IN ({_TRIGGERS}) THEN "
        f"CASE WHEN regexp_full_match({expr}, '[+-]?[0-9]+(?:\\.[0-9]+)?') THEN {expr} "
        f"ELSE '''' || {expr} END ELSE {expr} END"
    )


def _quoted(field: str, delimiter: str) -> str:
    """The CSV field of the text `field` (an SQL expression; NULL stays NULL), quoted as
    csv.writer's QUOTE_MINIMAL quotes it."""
    special = " OR ".join(
        f"contains({field}, {quote_literal(c)})" for c in dict.fromkeys((delimiter, "\r", "\n"))
    )
    return (
        f"CASE WHEN contains({field}, '\"') THEN '\"' || replace({field}, '\"', '\"\"') || '\"' "
        f"WHEN {special} THEN '\"' || {field} || '\"' ELSE {field} END"
    )


def _timestamp(expr: str, local: str, options: FormatOptions) -> str | None:
    """`expr` formatted as the wall-clock time `local` (an SQL expression of it)."""
    if parse_date_format(options.date_format) is None:
        return None
    # The C library stops padding %Y below year 1000: those go through Python.
    return (
        f"CASE WHEN {expr} IS NULL THEN NULL "
        f"WHEN year({local}) BETWEEN 1000 AND 9999 "
        f"THEN strftime({local}, {quote_literal(options.date_format)}) "
        f"ELSE error({quote_literal(_FALLBACK)}) END"
    )


def offset_micros(expr: str, offsets: Sequence[tuple[int, int]]) -> str:
    """The SQL of the zone's UTC offset (microseconds) at the instant `expr` (TIMESTAMP
    WITH TIME ZONE), given the zone's offsets (zone_offsets) over the values' range."""
    instant = f"epoch_us({expr})"
    if len(offsets) == 1:
        return str(offsets[0][1])
    branches = " ".join(
        f"WHEN {instant} < {start} THEN {previous}"
        for (_, previous), (start, _) in pairwise(offsets)
    )
    return f"CASE {branches} ELSE {offsets[-1][1]} END"


def wall_clock(expr: str, offsets: Sequence[tuple[int, int]]) -> str:
    """`expr` (TIMESTAMP WITH TIME ZONE) as the TIMESTAMP of its wall-clock time, given
    the zone's UTC offsets (zone_offsets) over the values' range: plain integer arithmetic
    on the instant, where DuckDB's timezone() asks ICU's calendar for every row."""
    return f"make_timestamp(epoch_us({expr}) + {offset_micros(expr, offsets)})"


def zone_offsets(zone: ZoneInfo, low: int, high: int) -> list[tuple[int, int]]:
    """The UTC offsets (microseconds) `zone` gives instants from `low` to `high` (epoch
    microseconds), as (first instant, offset) in time order; the first entry's instant is
    where the range starts. The same offsets csv_writer.text_value's astimezone applies
    (zoneinfo). Instants outside Python's years 1-9999 are left out: such values go
    through the Python path anyway (_timestamp)."""

    def offset(second: int) -> int:
        shift = datetime.fromtimestamp(second, zone).utcoffset()
        assert shift is not None
        return (shift.days * 86_400 + shift.seconds) * 1_000_000

    first = min(max(math.floor(low / 1_000_000), _FIRST_SECOND), _LAST_SECOND)
    last = min(max(math.ceil(high / 1_000_000), first), _LAST_SECOND)
    found = [(first * 1_000_000, offset(first))]
    previous = first
    # Offsets change at whole seconds, and never twice within _OFFSET_PROBE_SECONDS.
    for probe in [*range(first + _OFFSET_PROBE_SECONDS, last, _OFFSET_PROBE_SECONDS), last]:
        if offset(probe) != found[-1][1]:
            # The first second in (previous, probe] with the new offset.
            below, above = previous, probe
            while above - below > 1:
                middle = (below + above) // 2
                if offset(middle) == found[-1][1]:
                    below = middle
                else:
                    above = middle
            found.append((above * 1_000_000, offset(above)))
        previous = probe
    return found


def column_sql(
    expr: str,
    type_name: str,
    options: FormatOptions,
    offsets: Sequence[tuple[int, int]] = ((0, 0),),
) -> str | None:
    """The SQL giving `expr` (of DuckDB type `type_name`) as its CSV field text, or None
    when only the Python path formats that type exactly. `offsets` (zone_offsets of the
    configured zone over the column's values) place a zone-aware timestamp in that zone."""
    if type_name == "VARCHAR":
        return _text(expr)
    if type_name == "BOOLEAN":
        return f"CASE WHEN {expr} THEN 'true' WHEN NOT {expr} THEN 'false' END"
    if type_name in _INTEGERS or type_name == "DATE" or type_name.startswith("DECIMAL("):
        # Arrow's and DuckDB's casts agree with str(int), date.isoformat() and
        # format(Decimal, "f"): every scale digit, never an exponent.
        return f"CAST({expr} AS VARCHAR)"
    if type_name == "TIMESTAMP WITH TIME ZONE":
        return _timestamp(expr, wall_clock(expr, offsets), options)
    if type_name == "TIMESTAMP":
        # A naive value is shown as it is (csv_writer.text_value).
        return _timestamp(expr, expr, options)
    return None


def column_offsets(
    cursor: duckdb.DuckDBPyConnection,
    source: CopySource,
    types: Sequence[str],
    zone: ZoneInfo,
) -> list[Sequence[tuple[int, int]]]:
    """Per column, the zone's offsets over the range of its values (zone-aware timestamp
    columns only: the others get a placeholder), read in one aggregate query; none is
    needed for UTC, the default."""
    zoned = [i for i, t in enumerate(types) if t == "TIMESTAMP WITH TIME ZONE"]
    placeholder: Sequence[tuple[int, int]] = ((0, 0),)
    found: list[Sequence[tuple[int, int]]] = [placeholder] * len(types)
    if not zoned or zone.key in _UTC_ZONES:
        return found
    # As epoch microseconds: a value past year 9999 has no Python datetime.
    bounds = ", ".join(
        f"epoch_us(min({source.columns[i]})), epoch_us(max({source.columns[i]}))" for i in zoned
    )
    # fetchall, not fetchone: a result left open blocks the cursor's next query.
    (row,) = cursor.execute(f"SELECT {bounds} {source.from_where}").fetchall()
    for n, i in enumerate(zoned):
        low, high = row[2 * n], row[2 * n + 1]
        if low is not None:
            found[i] = zone_offsets(zone, low, high)
    return found


def _memory_limit_mib(cursor: duckdb.DuckDBPyConnection) -> float:
    """The connection's memory_limit in MiB (DuckDB shows it as, e.g., '1.8 GiB')."""
    ((shown,),) = cursor.execute(
        "SELECT value FROM duckdb_settings() WHERE name = 'memory_limit'"
    ).fetchall()
    amount, _, unit = str(shown).partition(" ")
    return float(amount) * _MEMORY_UNITS.get(unit, 1)


def _header(titles: Sequence[str], options: FormatOptions) -> str:
    buffer = io.StringIO(newline="")
    CsvWriter(buffer, options).header(titles)
    return buffer.getvalue()


def copy_csv(
    cursor: duckdb.DuckDBPyConnection,
    source: CopySource,
    titles: Sequence[str],
    options: FormatOptions,
    path: Path,
) -> int | None:
    """Write the whole CSV file to `path` with COPY: the rows written, or None (and
    nothing promised about `path`) when the caller must write it through CsvWriter."""
    if not source.columns or _memory_limit_mib(cursor) < COPY_MIN_MEMORY_MIB:
        return None
    probe = cursor.sql(f"SELECT {', '.join(source.columns)} {source.from_where} LIMIT 0")
    types = [str(t) for t in probe.types]
    if any(column_sql(e, t, options) is None for e, t in zip(source.columns, types, strict=True)):
        return None
    offsets = column_offsets(cursor, source, types, options.zone)
    texts = [
        text
        for e, t, o in zip(source.columns, types, offsets, strict=True)
        if (text := column_sql(e, t, options, o)) is not None
    ]
    if len(texts) == 1:
        fields = [f"coalesce({texts[0]}, '')"]
    else:
        # Text comes out NULL when empty already (_text); other types go through nullif
        # (an empty date format makes every timestamp '').
        fields = [t if type_name == "VARCHAR" else f"nullif({t}, '')"
                  for t, type_name in zip(texts, types, strict=True)]  # fmt: skip
    # Formatted in an inner query, so each field's text is computed once and then quoted.
    names = [f"f{i}" for i in range(len(fields))]
    quoted = [_quoted(name, options.delimiter) for name in names]
    if len(quoted) == 1:
        quoted = [f"CASE WHEN f0 = '' THEN '\"\"' ELSE {quoted[0]} END"]
    formatted = source.select([f"{f} AS {n}" for f, n in zip(fields, names, strict=True)])
    select = f"SELECT {', '.join(quoted)} FROM ({formatted})"
    header = _header(titles, options)
    copy = (
        f"COPY ({select}) TO {quote_literal(str(path))} (FORMAT csv, HEADER false, "
        f"DELIMITER {quote_literal(options.delimiter)}, QUOTE '', "
        f"NEW_LINE '\\r\\n', PREFIX {quote_literal(header)}, "
        f"SUFFIX {quote_literal(RECORD_END)})"
    )
    try:
        ((rows,),) = cursor.execute(copy).fetchall()
    except duckdb.Error as error:
        if _FALLBACK in str(error):
            return None
        raise
    if not rows:
        # PREFIX and SUFFIX both stand in a file without records: the header alone.
        path.write_text(header, encoding="utf-8", newline="")
    return int(rows)
