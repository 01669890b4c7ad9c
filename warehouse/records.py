"""Record reads: the parameters of a record list, then a page or one record from DuckDB.

Plain Python over a DuckDB cursor in which each table is a view by its plain name (the
warehouse reader gives one); nothing here knows HTTP. Records come back as JSON text built
by DuckDB itself: decimals keep their exact digits (12.30), strings are escaped byte-exact,
and no Python object is made per value, which keeps a 250-record page cheap.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa

from quarry.errors import NotFound
from warehouse.catalog import Dataset, Field, dataset
from warehouse.query.sql import pushdown_safe
from warehouse.record_filters import Condition, equality, invalid, parse_instant
from warehouse.schemas import TABLES
from warehouse.sql_values import bind

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 250
# Deep paging is for exports; the bound keeps OFFSET far inside BIGINT.
MAX_PAGE = 1_000_000
# Timestamps leave as ISO 8601 UTC with microseconds and `Z`: lossless, one fixed width.
TIMESTAMP_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"
# Parameters of a record list that are not field filters. Scalars may appear once; lists
# (comma-separated) may also be repeated.
SCALAR_PARAMETERS = ("page", "page_size", "created_at_min", "created_at_max")
LIST_PARAMETERS = ("fields", "store_ids")
_DIGITS = re.compile(r"^[0-9]{1,9}$")


@dataclass(frozen=True)
class RecordQuery:
    """A parsed record list request. `store_ids` is what the caller asked for (None: all),
    still to be checked against what the caller may read."""

    dataset: Dataset
    fields: tuple[Field, ...]
    page: int = 1
    page_size: int = DEFAULT_PAGE_SIZE
    store_ids: tuple[str, ...] | None = None
    conditions: tuple[Condition, ...] = ()


@dataclass(frozen=True)
class RecordPage:
    """One page: each record a JSON object text, fields in the requested order."""

    records: list[str]
    page: int
    page_size: int
    has_more: bool


def record_dataset(name: str) -> Dataset:
    """The record dataset `name`; NotFound for query-only datasets such as `sales`."""
    found = dataset(name)
    if found is None or found.kind != "records":
        raise NotFound(f"there is no record dataset {name!r}")
    return found


def parse_fields(ds: Dataset, raw_values: Sequence[str] | None) -> tuple[Field, ...]:
    """Fields named in `fields` (comma-separated, possibly repeated), in the order given;
    every record field in catalog order when absent. Unknown and aggregate-only fields and
    empty lists are a 400 naming the field."""
    if raw_values is None:
        return ds.record_fields
    chosen: dict[str, Field] = {}
    for name in (part.strip() for raw in raw_values for part in raw.split(",")):
        found = ds.field(name)
        if not name:
            raise invalid("fields", "empty field name")
        if found is None:
            raise invalid("fields", f"{name!r} is not a field of {ds.name}")
        if found.aggregate_only:
            raise invalid("fields", f"{name!r} is aggregate-only: use POST /v1/query")
        chosen.setdefault(name, found)
    return tuple(chosen.values())


def parse_store_ids(raw_values: Sequence[str] | None) -> tuple[str, ...] | None:
    """Store ids of `store_ids` (comma-separated, possibly repeated), or None when absent."""
    if raw_values is None:
        return None
    ids = [part.strip() for raw in raw_values for part in raw.split(",")]
    if not all(ids):
        raise invalid("store_ids", "empty store id")
    return tuple(dict.fromkeys(ids))


def whole_number(text: str, parameter: str, maximum: int) -> int:
    """A paging parameter: a whole number from 1 to `maximum`, never clamped."""
    if not _DIGITS.match(text) or not 1 <= int(text) <= maximum:
        raise invalid(parameter, f"must be a whole number from 1 to {maximum}, got {text!r}")
    return int(text)


def field_type(ds: Dataset, item: Field) -> pa.DataType:
    return TABLES[ds.table].schema.field(item.source).type


def parse_list_params(ds: Dataset, params: Sequence[tuple[str, str]]) -> RecordQuery:
    """A RecordQuery from query parameters (name, value) in the order received. Every
    parameter is used or rejected with a 400 naming it: nothing is ignored."""
    grouped: dict[str, list[str]] = {}
    for name, value in params:
        grouped.setdefault(name, []).append(value)
    scalars: dict[str, str] = {}
    conditions: list[Condition] = []
    for name, values in grouped.items():
        if name in SCALAR_PARAMETERS:
            if len(values) > 1:
                raise invalid(name, "given more than once")
            scalars[name] = values[0]
        elif name in LIST_PARAMETERS:
            continue
        else:
            item = ds.field(name)
            if item is None or item.aggregate_only:
                raise invalid(name, f"unknown parameter: {ds.name} has no field {name!r}")
            column = f'"{item.source}"'
            conditions.append(equality(column, field_type(ds, item), values, name, item.values))
    for bound, operator in (("created_at_min", ">="), ("created_at_max", "<")):
        if bound in scalars:
            instant, _ = parse_instant(scalars[bound], bound)
            conditions.append(Condition(f'"created_at" {operator} ?', (instant,)))
    return RecordQuery(
        dataset=ds,
        fields=parse_fields(ds, grouped.get("fields")),
        page=whole_number(scalars.get("page", "1"), "page", MAX_PAGE),
        page_size=whole_number(
            scalars.get("page_size", str(DEFAULT_PAGE_SIZE)), "page_size", MAX_PAGE_SIZE
        ),
        store_ids=parse_store_ids(grouped.get("store_ids")),
        conditions=tuple(conditions),
    )


def parse_record_params(ds: Dataset, params: Sequence[tuple[str, str]]) -> tuple[Field, ...]:
    """The fields of a by-id read; `fields` is its only parameter."""
    for name, _ in params:
        if name != "fields":
            raise invalid(name, "unknown parameter: a record by id takes only `fields`")
    raw = [value for _, value in params]
    return parse_fields(ds, raw or None)


def json_object_sql(ds: Dataset, fields: Sequence[Field]) -> str:
    """A DuckDB expression rendering one row as a JSON object of `fields`. Names come from
    the catalog (lowercase identifiers), never from a request."""
    parts = []
    for item in fields:
        column = f'"{item.source}"'
        if pa.types.is_timestamp(field_type(ds, item)):
            column = f"strftime(timezone('UTC', {column}), '{TIMESTAMP_FORMAT}')"
        parts.append(f"'{item.name}', {column}")
    return f"json_object({', '.join(parts)})"


def _store_condition(store_ids: Sequence[str]) -> Condition:
    return Condition(f'"store_id" IN ({", ".join(["?"] * len(store_ids))})', tuple(store_ids))


def list_records(cursor: Any, query: RecordQuery, store_ids: Sequence[str]) -> RecordPage:
    """The page `query` asks for, from the stores `store_ids` (already checked against
    what the caller may read). Ordered by created_at then id, so pages never overlap or
    skip; one record more than the page is fetched to learn `has_more` without counting."""
    if not store_ids:
        return RecordPage([], query.page, query.page_size, False)
    conditions = (_store_condition(store_ids), *query.conditions)
    order = 'ORDER BY "created_at", "id"'
    # The page is cut in a subquery, so JSON is built for its rows only: with the JSON in
    # the same SELECT, DuckDB renders every matching row before the top-N (10x slower).
    sql = (
        f"SELECT {json_object_sql(query.dataset, query.fields)} FROM ("
        f'SELECT * FROM "{query.dataset.table}" '
        f"WHERE {' AND '.join(c.sql for c in conditions)} {order} LIMIT ? OFFSET ?"
        f") AS page {order}"
    )
    params: list[object] = [value for c in conditions for value in c.params]
    params += [query.page_size + 1, (query.page - 1) * query.page_size]
    rows = cursor.execute(bind(sql, params)).fetchall()
    records = [row[0] for row in rows[: query.page_size]]
    return RecordPage(records, query.page, query.page_size, len(rows) > query.page_size)


def get_record(
    cursor: Any, ds: Dataset, record_id: str, fields: Sequence[Field], store_ids: Sequence[str]
) -> str:
    """One record as JSON object text; NotFound, worded the same, whether the id is unknown
    or belongs to a store outside `store_ids`."""
    # The id stays out of the message: both cases must give the very same body.
    missing = NotFound(f"no {ds.name} record with this id")
    if not store_ids:
        raise missing
    where = _store_condition(store_ids)
    id_column = pushdown_safe('"id"', record_id)
    sql = (
        f'SELECT {json_object_sql(ds, fields)} FROM "{ds.table}" '
        f"WHERE {id_column} = ? AND {where.sql} LIMIT 1"
    )
    row = cursor.execute(bind(sql, [record_id, *where.params])).fetchone()
    if row is None:
        raise missing
    return str(row[0])


def utc_instant(value: datetime) -> str:
    """A UTC instant in the same format as record timestamps."""
    return value.astimezone(UTC).strftime(TIMESTAMP_FORMAT)
