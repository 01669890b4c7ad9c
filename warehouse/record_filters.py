"""Typed values for record filters: the text of a query parameter -> SQL predicates.

Syntax (docs/api.md, "Filters"): a parameter value is a list of items separated by commas.
An item in double quotes is literal (`""` inside stands for one `"`), so `"a,b"` is one
value holding a comma and `"null"` is the four-letter string; the bare word `null` matches
a missing value. Items are typed by the field's column: integers, exact decimals, booleans
(`true`/`false`) and timestamps (ISO 8601, or a date meaning that whole UTC day).

Values are always bound parameters; only column names, which come from the catalog, are
written into the SQL.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal, InvalidOperation
from typing import Any

import pyarrow as pa

from quarry.errors import InvalidRequest
from warehouse.query.sql import pushdown_safe
from warehouse.sql_values import bind

NULL = object()  # the bare word `null`: a missing value, not the string "null"
# The text of a number: what Decimal reads, less whitespace, underscores, NaN/Infinity and
# exponents of more than 9 digits (Decimal refuses those past 18). One pattern for the
# parser and for /openapi.json (filter_schema).
NUMBER = r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]{1,9})?"
_NUMBER = re.compile(NUMBER)
_BOOLEAN = "[Tt][Rr][Uu][Ee]|[Ff][Aa][Ll][Ss][Ee]"  # what _equal_boolean's lower() reads
# An item as split_items reads it: in double quotes ("" for one quote), or bare.
_QUOTED = '"(?:[^"]|"")*"'
_BARE = '[^",][^,]*'
_INT64_MAX = 2**63 - 1
# A space where an offset's `+` was: an unencoded `+` in a query string decodes to a space.
_SPACE_OFFSET = re.compile(r"^(.*T\d{2}(?::?\d{2}){0,2}(?:[.,]\d+)?) (\d{2}(?::?\d{2})?)$")


@dataclass(frozen=True)
class Condition:
    """One SQL predicate and the values bound to its `?` placeholders, in order."""

    sql: str
    params: tuple[object, ...] = ()

    def inline(self) -> str:
        """The predicate with its values written in as literals (warehouse.sql_values)."""
        return bind(self.sql, self.params)


def invalid(parameter: str, message: str) -> InvalidRequest:
    """The 400 for a parameter: named in `detail` and in `errors[].field`."""
    return InvalidRequest(
        f"{parameter}: {message}", errors=[{"field": parameter, "message": message}]
    )


def split_items(raw: str, parameter: str) -> list[object]:
    """The items of one parameter value: strings, or NULL for the bare word `null`."""
    items: list[object] = []
    position, end = 0, len(raw)
    while True:
        if raw.startswith('"', position):
            parts, cursor = [], position + 1
            while True:
                close = raw.find('"', cursor)
                if close == -1:
                    raise invalid(parameter, "a quoted value has no closing double quote")
                parts.append(raw[cursor:close])
                if raw.startswith('"', close + 1):  # "" is an escaped quote
                    parts.append('"')
                    cursor = close + 2
                    continue
                position = close + 1
                break
            items.append("".join(parts))
            if position == end:
                return items
            if raw[position] != ",":
                raise invalid(parameter, "a closing double quote must end the value")
            position += 1
            if position == end:
                raise invalid(parameter, 'empty value (write "" for the empty string)')
            continue
        comma = raw.find(",", position)
        token = raw[position:] if comma == -1 else raw[position:comma]
        if token == "":
            raise invalid(parameter, 'empty value (write "" for the empty string)')
        items.append(NULL if token == "null" else token)
        if comma == -1:
            return items
        position = comma + 1


def parse_instant(text: str, parameter: str) -> tuple[datetime, bool]:
    """(UTC instant, whether `text` was a bare date) for ISO 8601 text. A date means
    midnight UTC; a time without a zone is UTC; `Z` and offsets are honoured."""
    candidate = _SPACE_OFFSET.sub(r"\1+\2", text)
    try:
        parsed = datetime.fromisoformat(candidate)
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=UTC)
        return parsed.astimezone(UTC), _is_date(text)
    except (ValueError, OverflowError):
        raise invalid(
            parameter, f"{text!r} is not an ISO 8601 date or timestamp (e.g. 2024-05-01T10:00:00Z)"
        ) from None


def _is_date(text: str) -> bool:
    try:
        date.fromisoformat(text)
    except ValueError:
        return False
    return True


def _number(text: str, parameter: str) -> Decimal:
    # The pattern first: Decimal also reads spaces, `1_000`, non-ASCII digits and NaN,
    # which /openapi.json does not promise (and nobody means).
    if not _NUMBER.fullmatch(text):  # fullmatch: `$` would allow a final newline
        raise invalid(parameter, f"{text!r} is not a number")
    try:
        return Decimal(text)
    except InvalidOperation:  # pragma: no cover - the pattern admits only what Decimal reads
        raise invalid(parameter, f"{text!r} is not a number") from None


def _equal_integer(column: str, text: str, parameter: str) -> Condition | None:
    value = _number(text, parameter)
    # Bounded before converting, so `1e999999999` costs nothing; None: matches no row.
    if value.adjusted() > 18 or value != value.to_integral_value():
        return None
    number = int(value)
    return Condition(f"{column} = ?", (number,)) if abs(number) <= _INT64_MAX else None


def _equal_decimal(column: str, text: str, parameter: str, kind: pa.Decimal128Type) -> Condition:
    value = _number(text, parameter)
    whole_digits = kind.precision - kind.scale
    step = Decimal(1).scaleb(-kind.scale)
    if value.adjusted() >= whole_digits or value != value.quantize(step, rounding="ROUND_DOWN"):
        return Condition("FALSE")  # not representable in the column, so equal to no value
    return Condition(
        f"{column} = CAST(? AS DECIMAL({kind.precision}, {kind.scale}))",
        (str(value.quantize(step)),),
    )


def _equal_boolean(column: str, text: str, parameter: str) -> Condition:
    lowered = text.lower()
    if lowered not in ("true", "false"):
        raise invalid(parameter, f"{text!r} is not a boolean (true or false)")
    return Condition(f"{column} = ?", (lowered == "true",))


def _equal_timestamp(column: str, text: str, parameter: str) -> Condition:
    instant, whole_day = parse_instant(text, parameter)
    if not whole_day:
        return Condition(f"{column} = ?", (instant,))
    day_start = datetime.combine(instant.date(), time(), UTC)
    try:
        return Condition(f"({column} >= ? AND {column} < ?)", (day_start, day_start + timedelta(1)))
    except OverflowError:  # 9999-12-31: the day has no end inside datetime's range
        return Condition(f"{column} >= ?", (day_start,))


def check_allowed(item: str, allowed: Sequence[str], parameter: str) -> None:
    """InvalidRequest naming the allowed values when `item` is not one of them: a typo
    (`payed`) would otherwise match nothing, silently."""
    if item not in allowed:
        message = (
            f"{item!r} is not a value of {parameter}; allowed: {', '.join(allowed)} "
            "(or null for a missing value)"
        )
        raise invalid(parameter, message)


def equality(
    column: str,
    kind: pa.DataType,
    raw_values: list[str],
    parameter: str,
    allowed: Sequence[str] | None = None,
) -> Condition:
    """One parameter (every occurrence of it) as `(a OR b OR ...)` over `column`.

    `column` must be a quoted identifier from the catalog; `kind` its Arrow type;
    `allowed` the field's full set of values when it has one (catalog Field.values)."""
    items = [item for raw in raw_values for item in split_items(raw, parameter)]
    parts: list[Condition] = []
    strings: list[str] = []
    for item in items:
        if item is NULL:
            parts.append(Condition(f"{column} IS NULL"))
            continue
        assert isinstance(item, str)
        if pa.types.is_string(kind) or pa.types.is_large_string(kind):
            if allowed is not None:
                check_allowed(item, allowed, parameter)
            strings.append(item)
        elif pa.types.is_integer(kind):
            parts.append(_equal_integer(column, item, parameter) or Condition("FALSE"))
        elif pa.types.is_decimal(kind):
            parts.append(_equal_decimal(column, item, parameter, kind))
        elif pa.types.is_boolean(kind):
            parts.append(_equal_boolean(column, item, parameter))
        elif pa.types.is_timestamp(kind):
            parts.append(_equal_timestamp(column, item, parameter))
        else:  # a catalog field over a column type this module does not know yet
            raise invalid(parameter, "this field cannot be filtered on")
    if strings:
        marks = ", ".join(["?"] * len(strings))
        parts.append(Condition(f"{pushdown_safe(column, *strings)} IN ({marks})", tuple(strings)))
    sql = " OR ".join(part.sql for part in parts)
    return Condition(f"({sql})", tuple(value for part in parts for value in part.params))


def _items(item: str) -> dict[str, Any]:
    """A value of comma-separated `item`s (or the bare word null), each bare or quoted."""
    one = f'null|{item}|"(?:{item})"'
    return {"type": "string", "pattern": f"^(?:{one})(?:,(?:{one}))*$"}


def filter_schema(kind: pa.DataType, allowed: Sequence[str] | None = None) -> dict[str, Any]:
    """The JSON Schema of one value of an equality filter over a column of `kind`, as
    `equality` reads it, for /openapi.json: a request the schema allows is never refused.
    A field with a known set of values (`allowed`) admits only those, bare or quoted.
    Timestamps are described one per value (RFC 3339 date-time or date), which the server
    reads, though it also reads a comma list and other ISO 8601 forms (docs/api.md)."""
    if allowed is not None:
        return _items("|".join(re.escape(value) for value in allowed))
    if pa.types.is_integer(kind) or pa.types.is_decimal(kind):
        return _items(NUMBER)
    if pa.types.is_boolean(kind):
        return _items(_BOOLEAN)
    if pa.types.is_timestamp(kind):
        return {
            "anyOf": [
                {"type": "string", "format": "date-time"},
                {"type": "string", "format": "date"},
                {"type": "string", "enum": ["null"]},
            ]
        }
    return {"type": "string", "pattern": f"^(?:{_QUOTED}|{_BARE})(?:,(?:{_QUOTED}|{_BARE}))*$"}
