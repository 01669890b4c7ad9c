"""Validation of what a file holds: the columns and filters of a record dataset (with the
record endpoints' own parsers, so a filter means exactly what it means on GET /v1/orders)
and the text of a saved query."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, datetime
from typing import Any

from exports.configs.definition import ColumnSpec, PartSpec
from exports.configs.problems import Problems
from quarry.errors import InvalidQuery, InvalidRequest
from warehouse.catalog import Dataset
from warehouse.query import StoreInfo, compile_query
from warehouse.records import SCALAR_PARAMETERS, parse_fields, parse_list_params

# Record-list parameters that are not filters: a file has no pages, its columns and stores
# have their own keys.
NOT_FILTERS = ("page", "page_size", "fields", "store_ids")


def filter_text(value: Any) -> str:
    """A YAML scalar as the text of a query parameter (YAML reads 2024-05-01 as a date and
    true as a boolean; the record endpoints read text)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime | date):
        return value.isoformat()
    return str(value)


def record_columns(ds: Dataset, raw: Any, key: str, problems: Problems) -> tuple[ColumnSpec, ...]:
    """`columns`: field names or {field, title}; every record field when absent."""
    if raw is None:
        return tuple(ColumnSpec(f.name, f.title) for f in ds.record_fields)
    if not isinstance(raw, list) or not raw:
        problems.add(key, "must be a non-empty list of fields or {field, title}")
        return ()
    columns: list[ColumnSpec] = []
    for index, item in enumerate(raw):
        where = f"{key}[{index}]"
        title = None
        if isinstance(item, dict):
            problems.unknown_keys(where, item, ("field", "title"))
            name, title = item.get("field"), item.get("title")
            if title is not None and (not isinstance(title, str) or not title.strip()):
                problems.add(f"{where}.title", "must be non-empty text")
                title = None
        else:
            name = item
        if not isinstance(name, str) or not name:
            problems.add(where, "must name a field")
            continue
        try:
            (found,) = parse_fields(ds, [name])
        except InvalidRequest as exc:
            problems.absorb(where, exc, strip="fields")
            continue
        if any(c.field == found.name for c in columns):
            problems.add(where, f"{name!r} is listed twice")
            continue
        columns.append(ColumnSpec(found.name, title or found.title))
    return tuple(columns)


def record_filters(ds: Dataset, raw: Any, key: str, problems: Problems) -> dict[str, list[str]]:
    """`filters`: field (or created_at_min/max) -> value or list of values, checked by the
    record endpoints' parser. Stored as text and parsed again when a job runs."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        problems.add(key, "must be a mapping of field to value or list of values")
        return {}
    filters: dict[str, list[str]] = {}
    for name, value in raw.items():
        where = f"{key}.{name}"
        if name in NOT_FILTERS:
            problems.add(where, "is not a filter (columns and stores have their own keys)")
            continue
        values = value if isinstance(value, list) else [value]
        if not values or any(isinstance(v, dict | list) for v in values):
            problems.add(where, "must be a value or a list of values")
            continue
        if name in SCALAR_PARAMETERS and len(values) > 1:
            problems.add(where, "takes one value")
            continue
        filters[str(name)] = [filter_text(v) for v in values]
    for name, values in filters.items():
        try:
            parse_list_params(ds, [(name, v) for v in values])
        except InvalidRequest as exc:
            problems.absorb(f"{key}.{name}", exc, strip=name)
    return filters


def query_part(
    raw: Any,
    key: str,
    problems: Problems,
    *,
    stores: Mapping[str, StoreInfo],
    currency: str,
    timezone: str,
) -> str | None:
    """`query`: text in the query language, checked now against the export's stores."""
    if not isinstance(raw, str) or not raw.strip():
        problems.add(key, "is required for a query export: text in the query language")
        return None
    try:
        compile_query(raw, stores=stores, account_currency=currency, account_timezone=timezone)
    except InvalidQuery as exc:
        for item in exc.errors or [{"line": 1, "column": 1, "message": exc.detail}]:
            problems.add(key, f"line {item['line']} column {item['column']}: {item['message']}")
        return None
    return raw


def part_spec(
    ds: Dataset | None,
    name: str,
    entity_type: str,
    raw: dict[str, Any],
    key: str,
    problems: Problems,
    **query_context: Any,
) -> PartSpec:
    """One part from its mapping (an export's own keys, or an entry of a bundle's parts)."""
    prefix = f"{key}." if key else ""
    if ds is None:  # a query
        for extra in ("columns", "filters"):
            if raw.get(extra) is not None:
                problems.add(f"{prefix}{extra}", "not used by a query export (the query says it)")
        text = query_part(raw.get("query"), f"{prefix}query", problems, **query_context)
        return PartSpec(name=name, entity_type=entity_type, query=text)
    if raw.get("query") is not None:
        problems.add(f"{prefix}query", f"only for entity_type query, not {entity_type}")
    return PartSpec(
        name=name,
        entity_type=entity_type,
        columns=record_columns(ds, raw.get("columns"), f"{prefix}columns", problems),
        filters=record_filters(ds, raw.get("filters"), f"{prefix}filters", problems),
    )
