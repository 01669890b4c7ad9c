"""JSON Lines files: one JSON object per row, one row per line (LF), UTF-8, no header;
a file without rows is empty.

Values keep their meaning exactly: money and other decimals are JSON strings with every
digit (`"12.30"`; a JSON number would go through a double: DuckDB's JSON writer emits 16
significant digits), integers and booleans are JSON numbers and booleans, a missing value
is null, and timestamps are ISO 8601 text with `T` and the offset of
`format_options.time_zone` (`2024-05-01T12:00:00+02:00`, microseconds only when there are
some), as Python's isoformat() writes them.

A record part is written by DuckDB's own COPY (FORMAT json), every value formatted in SQL
first; the zone's offsets come from Python's zoneinfo (exports.files.csv_copy.zone_offsets),
as for CSV. A query part (small, already Python values) is written here with json.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from exports.configs.options import FormatOptions
from exports.files.csv_copy import column_offsets, offset_micros, wall_clock
from exports.files.sql_columns import column_types, identifier, unique_names
from exports.files.tables import Table
from warehouse.tables import quote_literal

_NATIVE = {"BOOLEAN", "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT",
           "UINTEGER", "UBIGINT", "DOUBLE", "FLOAT", "VARCHAR"}  # fmt: skip


def offset_text(micros: int) -> str:
    """A UTC offset as isoformat() writes it: +HH:MM, or +HH:MM:SS for historic zones."""
    sign = "-" if micros < 0 else "+"
    seconds = abs(micros) // 1_000_000
    text = f"{sign}{seconds // 3600:02d}:{seconds // 60 % 60:02d}"
    return text + (f":{seconds % 60:02d}" if seconds % 60 else "")


def _fraction(instant_us: str) -> str:
    """`.ffffff` when the instant (epoch microseconds, SQL) has microseconds, else ''."""
    micros = f"(({instant_us} % 1000000) + 1000000) % 1000000"
    return f"CASE WHEN {micros} = 0 THEN '' ELSE '.' || lpad(CAST({micros} AS VARCHAR), 6, '0') END"


def _date_time(wall: str) -> str:
    """`wall` (TIMESTAMP) as YYYY-MM-DDTHH:MM:SS, the year padded to four digits as
    isoformat() pads it (strftime's %Y does not, below year 1000)."""
    return f"lpad(CAST(year({wall}) AS VARCHAR), 4, '0') || strftime({wall}, '-%m-%dT%H:%M:%S')"


def _iso(expr: str, offsets: Sequence[tuple[int, int]]) -> str:
    """`expr` (TIMESTAMP WITH TIME ZONE) as ISO 8601 text in the zone of `offsets`."""
    distinct = dict.fromkeys(offset for _, offset in offsets)
    if len(distinct) == 1:
        suffix = quote_literal(offset_text(next(iter(distinct))))
    else:
        cases = " ".join(f"WHEN {o} THEN {quote_literal(offset_text(o))}" for o in distinct)
        suffix = f"CASE {offset_micros(expr, offsets)} {cases} END"
    wall = wall_clock(expr, offsets)
    return f"{_date_time(wall)} || {_fraction(f'epoch_us({expr})')} || {suffix}"


def value_sql(expr: str, type_name: str, offsets: Sequence[tuple[int, int]]) -> str:
    """The SQL of `expr` (of DuckDB type `type_name`) as the value its JSON should hold."""
    if type_name in _NATIVE:
        return expr
    if type_name == "TIMESTAMP WITH TIME ZONE":
        return _iso(expr, offsets)
    if type_name == "TIMESTAMP":  # naive: shown as it is, without an offset
        return f"{_date_time(expr)} || {_fraction(f'epoch_us({expr})')}"
    # DECIMAL(p, s), HUGEINT, DATE, ...: exact text (DuckDB's casts keep every digit).
    return f"CAST({expr} AS VARCHAR)"


def json_value(value: Any, options: FormatOptions) -> Any:
    """A Python value as the JSON the SQL path writes for it (json's `default`)."""
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, datetime):
        return (value.astimezone(options.zone) if value.tzinfo else value).isoformat()
    if isinstance(value, date):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} has no JSON form")


def write_jsonl(path: Path, options: FormatOptions, table: Table) -> int:
    """Rows written to `path`."""
    names = unique_names(table.column_names)
    if table.sql is not None:
        source = table.sql.source
        types = column_types(table.sql)
        offsets = column_offsets(table.sql.cursor, source, types, options.zone)
        columns = [
            f"{value_sql(e, t, o)} AS {identifier(n)}"
            for e, t, o, n in zip(source.columns, types, offsets, names, strict=True)
        ]
        copy = f"COPY ({source.select(columns)}) TO {quote_literal(str(path))} (FORMAT json)"
        ((rows,),) = table.sql.cursor.execute(copy).fetchall()
        return int(rows)
    written = 0
    with path.open("w", encoding="utf-8", newline="\n") as stream:
        for row in table.rows:
            record = dict(zip(names, row, strict=True))
            line = json.dumps(record, ensure_ascii=False, default=lambda v: json_value(v, options))
            stream.write(line + "\n")
            written += 1
    return written
