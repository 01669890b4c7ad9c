"""CSV text of Arrow columns, computed a column at a time with pyarrow.compute.

Formatting each value in Python (a zone conversion and a strftime per timestamp, a regex
per string) was nearly all the cost of a large CSV export. Here a column becomes its CSV
text in a few vectorised kernels, producing exactly what `csv_writer.text_value` produces
for the same values; quoting is still done by `csv.writer`, which is cheap on strings.

Any column this module cannot reproduce exactly (floats, whose Python repr Arrow does not
share; date formats with directives beyond the small set below; nanosecond timestamps;
years outside 1000..9999, where the C library's %Y stops padding) goes through
`csv_writer.text_value` value by value: slower, but never different.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from exports.configs.options import FormatOptions

# exports.files.neutralise's rule as RE2 patterns. RE2's `$` (without the m flag) matches only at
# the end of the text, like Python's fullmatch, so "-1\n" is not a plain number here either.
_TRIGGER = r"^[=+\-@\t\r]"
_PLAIN_NUMBER = r"^[+-]?[0-9]+(?:\.[0-9]+)?$"

# Date-format directives computed from Arrow's temporal components: (component, width).
# Only numeric, locale-free directives: %b, %a, %p and friends depend on the C locale, and
# %z/%Z on how Python names the zone, so a format using them takes the Python path.
_DIRECTIVES: dict[str, tuple[str, int]] = {
    "Y": ("year", 4),
    "y": ("year2", 2),
    "m": ("month", 2),
    "d": ("day", 2),
    "H": ("hour", 2),
    "M": ("minute", 2),
    "S": ("second", 2),
    "f": ("microsecond", 6),
}
_SUPPORTED_UNITS = ("s", "ms", "us")  # ns values reach Python as another type entirely


@lru_cache(maxsize=64)
def parse_date_format(date_format: str) -> tuple[tuple[str, str, int], ...] | None:
    """The format as (kind, text-or-component, width) pieces, or None when it uses anything
    outside _DIRECTIVES (the caller then formats in Python)."""
    if "\x00" in date_format:  # strftime in C stops at a NUL; not worth imitating
        return None
    pieces: list[tuple[str, str, int]] = []
    literal: list[str] = []
    i = 0
    while i < len(date_format):
        char = date_format[i]
        if char != "%":
            literal.append(char)
            i += 1
            continue
        if i + 1 >= len(date_format):
            return None  # a trailing lone % is platform-defined
        directive = date_format[i + 1]
        i += 2
        if directive == "%":
            literal.append("%")
            continue
        if directive not in _DIRECTIVES:
            return None
        if literal:
            pieces.append(("text", "".join(literal), 0))
            literal = []
        component, width = _DIRECTIVES[directive]
        pieces.append(("field", component, width))
    if literal:
        pieces.append(("text", "".join(literal), 0))
    return tuple(pieces)


def _padded(values: pa.Array, width: int) -> pa.Array:
    return pc.utf8_lpad(values.cast(pa.string()), width=width, padding="0")


def _timestamps(column: pa.Array, options: FormatOptions) -> pa.Array | None:
    kind = column.type
    if kind.unit not in _SUPPORTED_UNITS:
        return None
    pieces = parse_date_format(options.date_format)
    if pieces is None:
        return None
    if kind.tz is not None:
        # A zone-aware value is shown in the configured zone (text_value's astimezone):
        # re-labelling the zone is exact, Arrow stores the instant in UTC either way, and
        # its component kernels then read local wall-clock time.
        column = column.cast(pa.timestamp(kind.unit, tz=options.time_zone))
    year = pc.year(column)
    low, high = pc.min_max(year).values()
    if low.is_valid and not 1000 <= low.as_py() <= high.as_py() <= 9999:
        return None
    components: dict[str, Callable[[], pa.Array]] = {
        "year": lambda: year,
        "year2": lambda: pc.subtract(year, pc.multiply(pc.divide(year, 100), 100)),
        "month": lambda: pc.month(column),
        "day": lambda: pc.day(column),
        "hour": lambda: pc.hour(column),
        "minute": lambda: pc.minute(column),
        "second": lambda: pc.second(column),
        # Arrow's microsecond is only the part below the millisecond.
        "microsecond": lambda: pc.add(
            pc.multiply(pc.millisecond(column), 1000), pc.microsecond(column)
        ),
    }
    parts: list[pa.Array | str] = []
    for kind_, text, width in pieces:
        parts.append(text if kind_ == "text" else _padded(components[text](), width))
    if not any(isinstance(p, pa.Array) for p in parts):
        # A format without directives is the same text for every present value.
        constant = "".join(str(p) for p in parts)
        return pc.if_else(pc.is_valid(column), constant, "")
    # Nulls propagate through the join (emit_null) and become empty fields.
    return pc.binary_join_element_wise(*parts, "")


def _neutralised(column: pa.Array) -> pa.Array:
    dangerous = pc.and_(
        pc.match_substring_regex(column, _TRIGGER),
        pc.invert(pc.match_substring_regex(column, _PLAIN_NUMBER)),
    )
    # Scalars typed like the column: the join has no kernel mixing string and large_string.
    apostrophe, nothing = pa.scalar("'", column.type), pa.scalar("", column.type)
    prefixed = pc.binary_join_element_wise(apostrophe, column, nothing)
    return pc.if_else(dangerous, prefixed, column)


def column_text(
    column: pa.Array | pa.ChunkedArray,
    options: FormatOptions,
    fallback: Callable[[Any], str],
) -> pa.Array:
    """Every value of `column` as its CSV field text (before quoting): the same strings
    `fallback` (csv_writer.text_value, passed in to keep the modules acyclic) gives for
    the values Arrow's to_pylist would produce."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    kind = column.type
    text: pa.Array | None = None
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        text = _neutralised(column)
    elif pa.types.is_boolean(kind):
        text = pc.if_else(column, "true", "false")
    elif pa.types.is_integer(kind) or pa.types.is_date32(kind):
        # str(int) and date.isoformat() are Arrow's own casts (years 1..9999 padded).
        text = column.cast(pa.string())
    elif pa.types.is_decimal(kind) and kind.scale >= 0:
        # format(Decimal, "f") of a scaled value keeps every scale digit, as Arrow's cast
        # does, except that Arrow switches to an exponent for tiny values ("0E-10"): those
        # few are redone in Python below.
        text = column.cast(pa.string())
        exponent = pc.match_substring(text, "E")
        if pc.any(exponent).as_py():
            texts = pc.fill_null(text, "").to_pylist()
            for i in pc.indices_nonzero(pc.fill_null(exponent, False)).to_pylist():
                texts[i] = fallback(column[i].as_py())
            return pa.array(texts, pa.string())
    elif pa.types.is_timestamp(kind):
        try:
            text = _timestamps(column, options)
        except pa.ArrowException:
            # Arrow reads zones from the system database, zoneinfo may use the tzdata
            # package instead: a zone only Python knows is still formatted, in Python.
            text = None
    if text is None:
        return pa.array([fallback(v) for v in column.to_pylist()], pa.string())
    # One string type for the record join (no kernel mixes string and large_string).
    return pc.fill_null(text, "").cast(pa.string())


def records_text(columns: list[pa.Array], delimiter: str, record_end: str) -> str:
    """The records of these field texts (at least one column) joined as `csv.writer`
    with QUOTE_MINIMAL and doublequote joins them: a field holding the delimiter, a quote,
    CR or LF is quoted with its quotes doubled, and a record of one empty field is `""`
    (so it is not a blank line). Quoting in Python was half the cost once values were
    formatted a column at a time."""
    special = "[" + re.escape(delimiter) + '"\\r\\n]'
    fields = []
    for column in columns:
        doubled = pc.replace_substring(column, '"', '""')
        quoted = pc.binary_join_element_wise('"', doubled, '"', "")
        fields.append(pc.if_else(pc.match_substring_regex(column, special), quoted, column))
    if len(fields) == 1:
        fields[0] = pc.if_else(pc.equal(fields[0], ""), '""', fields[0])
    records = pc.binary_join_element_wise(*fields, delimiter)
    return record_end.join(records.to_pylist()) + record_end
