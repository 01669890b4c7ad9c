"""CSV of a record part written by DuckDB's own COPY, formatted in SQL.

Formatting in Python, even a column at a time with Arrow (exports.csv_arrow), cost more
than reading and sorting the rows: a large CSV export spent most of its time moving
batches out of DuckDB to format them. Here DuckDB formats every value in SQL and writes
the file itself, streaming and in parallel, producing exactly the bytes of `CsvWriter`:

- DuckDB's CSV writer quotes a field holding the delimiter, a quote, CR or LF and doubles
  quotes, as `csv.writer` with QUOTE_MINIMAL does (and, unless COMMENT is set empty, a
  field holding `#`, its default comment character); it writes NULL as an empty field and the
  empty string as `""`. So every empty text becomes NULL, except in a one-column file,
  where `csv.writer` itself writes `""` for an empty field (so the record is not a blank
  line).
- The header (with the BOM) is the COPY's PREFIX, written by `CsvWriter.header`; the last
  record's line end is its SUFFIX (COPY separates records and leaves the last open).

A column this module cannot format exactly (floats, nanosecond timestamps, a date format
with directives beyond csv_arrow's locale-free set, a zone DuckDB does not know, a year
outside 1000..9999) makes `copy_csv` answer None, and the caller writes through CsvWriter.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from exports.csv_arrow import parse_date_format
from exports.csv_writer import RECORD_END, CsvWriter
from exports.neutralise import FORMULA_TRIGGERS
from exports.options import FormatOptions
from warehouse.views import quote_literal

# Raised inside the COPY for a value only the Python path formats right: the COPY is
# abandoned (its file is rewritten by the fallback).
_FALLBACK = "quarry-csv-copy-fallback"
_INTEGERS = {"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT",
             "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT", "UHUGEINT"}  # fmt: skip
_TRIGGERS = ", ".join(str(ord(t)) for t in FORMULA_TRIGGERS)


@dataclass(frozen=True)
class CopySource:
    """A record part as SQL: `columns` (expressions, in header order) selected
    `from_where` (FROM ... WHERE ...), ordered by `order_by`, with bound `params`."""

    columns: Sequence[str]
    from_where: str
    order_by: str
    params: Sequence[Any]

    def select(self, expressions: Sequence[str]) -> str:
        """SELECT `expressions` over the part's rows, in its order."""
        return f"SELECT {', '.join(expressions)} {self.from_where} ORDER BY {self.order_by}"


def _text(expr: str) -> str:
    # exports.neutralise.is_dangerous in SQL, and an empty text as NULL (see the module
    # docstring). Every trigger sorts below 'A' (code points 9 to 64), so one comparison
    # passes most text (names, statuses, ids) as it is; below it, the first character is
    # looked up as a code point, then a plain number stays as it is.
    return (
        f"CASE WHEN {expr} >= 'A' THEN {expr} WHEN {expr} = '' THEN NULL "
        f"WHEN ascii({expr}) IN ({_TRIGGERS}) THEN "
        f"CASE WHEN regexp_full_match({expr}, '[+-]?[0-9]+(?:\\.[0-9]+)?') THEN {expr} "
        f"ELSE '''' || {expr} END ELSE {expr} END"
    )


def _timestamp(expr: str, zoned: bool, options: FormatOptions) -> str | None:
    if parse_date_format(options.date_format) is None:
        return None
    # A zone-aware value is shown as the wall-clock time of the configured zone; a naive
    # one as it is (csv_writer.text_value's astimezone).
    local = f"timezone({quote_literal(options.time_zone)}, {expr})" if zoned else expr
    # The C library stops padding %Y below year 1000: those go through Python.
    return (
        f"CASE WHEN {local} IS NULL THEN NULL "
        f"WHEN year({local}) BETWEEN 1000 AND 9999 "
        f"THEN strftime({local}, {quote_literal(options.date_format)}) "
        f"ELSE error({quote_literal(_FALLBACK)}) END"
    )


def column_sql(expr: str, type_name: str, options: FormatOptions) -> str | None:
    """The SQL giving `expr` (of DuckDB type `type_name`) as its CSV field text, or None
    when only the Python path formats that type exactly."""
    if type_name == "VARCHAR":
        return _text(expr)
    if type_name == "BOOLEAN":
        return f"CASE WHEN {expr} THEN 'true' WHEN NOT {expr} THEN 'false' END"
    if type_name in _INTEGERS or type_name == "DATE" or type_name.startswith("DECIMAL("):
        # Arrow's and DuckDB's casts agree with str(int), date.isoformat() and
        # format(Decimal, "f"): every scale digit, never an exponent.
        return f"CAST({expr} AS VARCHAR)"
    if type_name in ("TIMESTAMP WITH TIME ZONE", "TIMESTAMP"):
        return _timestamp(expr, type_name != "TIMESTAMP", options)
    return None


def _knows_zone(cursor: duckdb.DuckDBPyConnection, zone: str) -> bool:
    # DuckDB's ICU and Python's zoneinfo (maybe the tzdata package) may differ.
    try:
        cursor.execute(f"SELECT timezone({quote_literal(zone)}, now())").fetchall()
    except duckdb.Error:
        return False
    return True


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
    if not source.columns:
        return None
    probe = cursor.sql(
        f"SELECT {', '.join(source.columns)} {source.from_where} LIMIT 0", params=source.params
    )
    types = [str(t) for t in probe.types]
    texts = [column_sql(e, t, options) for e, t in zip(source.columns, types, strict=True)]
    if any(t is None for t in texts):
        return None
    if "TIMESTAMP WITH TIME ZONE" in types and not _knows_zone(cursor, options.time_zone):
        return None
    if len(texts) == 1:
        fields = [f"coalesce({texts[0]}, '')"]
    else:
        # Text comes out NULL when empty already (_text); other types go through nullif
        # (an empty date format makes every timestamp '').
        fields = [t if type_name == "VARCHAR" else f"nullif({t}, '')"
                  for t, type_name in zip(texts, types, strict=True)]  # fmt: skip
    header = _header(titles, options)
    select = source.select(fields)
    copy = (
        f"COPY ({select}) TO {quote_literal(str(path))} (FORMAT csv, HEADER false, "
        f"DELIMITER {quote_literal(options.delimiter)}, QUOTE '\"', ESCAPE '\"', "
        f"NEW_LINE '\\r\\n', COMMENT '', PREFIX {quote_literal(header)}, "
        f"SUFFIX {quote_literal(RECORD_END)})"
    )
    try:
        ((rows,),) = cursor.execute(copy, list(source.params)).fetchall()
    except duckdb.Error as error:
        if _FALLBACK in str(error):
            return None
        raise
    if not rows:
        # PREFIX and SUFFIX both stand in a file without records: the header alone.
        path.write_text(header, encoding="utf-8", newline="")
    return int(rows)
