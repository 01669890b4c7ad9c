"""Values written into DuckDB SQL as literals rather than bound as parameters.

DuckDB's Python client imports pandas the first time a statement binds a parameter that is
not None: it compares every value with `pandas.NaT` before looking at its type
(duckdb-python, src/native/python_conversion.cpp, GetPythonObjectType). That import costs a
process 0.6-1.3 s, and an export run binds filter values in almost every statement it
runs. So statements are built with `?` placeholders as before (user values never enter
the text through an f-string) and `bind` renders each value as a literal of the type the
parameter would have had.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import date, datetime, time
from decimal import Decimal

from warehouse.tables import quote_literal

# A quoted string or identifier (kept as it is: a `?` inside is text), or a placeholder.
_TOKEN = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|\?")


def bind(sql: str, params: Sequence[object]) -> str:
    """`sql` with its `?` placeholders (those outside quotes) replaced, in order, by
    `params` as literals. The text is the program's own: every user value arrives in
    `params`. ValueError when the counts differ."""
    values = iter(params)
    used = 0

    def substitute(match: re.Match[str]) -> str:
        nonlocal used
        if match.group() != "?":
            return match.group()
        used += 1
        value = next(values, _MISSING)
        return "" if value is _MISSING else literal(value)

    text = _TOKEN.sub(substitute, sql)
    if used != len(params):
        raise ValueError(f"{used} placeholders for {len(params)} values in: {sql}")
    return text


_MISSING = object()


def literal(value: object) -> str:
    """`value` as a DuckDB literal: text as an untyped string constant (typed by where it is
    used, as a bound parameter is), numbers, instants and lists with their own types."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return f"({int.__repr__(value)})"
    if isinstance(value, float):
        return f"CAST('{float.__repr__(value)}' AS DOUBLE)"
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise ValueError(f"no SQL literal for {value}")
        return f"({value:f})"
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, datetime):
        kind = "TIMESTAMP" if value.tzinfo is None else "TIMESTAMPTZ"
        return f"{kind} '{value.isoformat(sep=' ')}'"
    if isinstance(value, date):
        return f"DATE '{value.isoformat()}'"
    if isinstance(value, time):
        return f"TIME '{value.isoformat()}'"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(literal(item) for item in value) + "]"
    raise TypeError(f"no SQL literal for a {type(value).__name__}")


def _text(value: str) -> str:
    # DuckDB's parser reads the statement up to a NUL byte: a NUL inside a quoted string
    # would end the statement there, so it is spelled chr(0) between quoted parts.
    if "\x00" not in value:
        return quote_literal(value)
    return "(" + " || chr(0) || ".join(quote_literal(part) for part in value.split("\x00")) + ")"
