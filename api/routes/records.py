"""GET /v1/{dataset} and GET /v1/{dataset}/{id} for each record dataset of the catalog.

One pair of routes per dataset rather than a `{dataset}` path parameter, so /openapi.json
lists each dataset's own filter parameters and record schema, and a query-only dataset
such as `sales` simply has no route (404). Parameters are parsed by warehouse.records,
which rejects anything it does not know; they are documented here for OpenAPI.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import Response

from api.deps import ReaderDep, ReadPrincipal
from api.json import raw_json_response, records_page_response
from api.openapi import AUTHENTICATED, problem_responses
from api.schemas import page_model, record_model
from warehouse.catalog import RECORD_DATASETS, Dataset
from warehouse.reader import WarehouseReader
from warehouse.record_filters import filter_schema, invalid, split_items
from warehouse.records import (
    DEFAULT_PAGE_SIZE,
    MAX_PAGE,
    MAX_PAGE_SIZE,
    field_type,
    get_record,
    list_records,
    parse_list_params,
    parse_record_params,
    record_dataset,
)

router = APIRouter(prefix="/v1", tags=["records"])

MICROSECOND_DIGITS = 6
_FILTER_HELP = {
    "string": "exact, case-sensitive text",
    "number": "a number",
    "money": "an exact decimal amount such as 12.30",
    "date": "an ISO 8601 timestamp (that instant) or a date (that whole UTC day)",
    "boolean": "true or false",
    "percent": "a number",
}


# An empty value (`id=`, `store_ids=`) is refused with a 400 naming the parameter; the
# empty string itself is written `""`.
NON_EMPTY: dict[str, Any] = {"type": "string", "minLength": 1}


def _cursor(reader: WarehouseReader, stores: tuple[str, ...]) -> AbstractContextManager[Any]:
    # No store to read means nothing to open: the record functions answer without a cursor.
    return reader.read(stores) if stores else nullcontext(None)


def _fields_parameter(ds: Dataset) -> dict[str, Any]:
    return {
        "name": "fields",
        "in": "query",
        "required": False,
        "description": "Comma-separated fields to return, in this order (default: every "
        "record field). Aggregate-only fields are rejected.",
        "schema": {
            "type": "array",
            "minItems": 1,
            "items": {"type": "string", "enum": [f.name for f in ds.record_fields]},
        },
        "style": "form",
        "explode": False,
    }


def _list_parameters(ds: Dataset) -> list[dict[str, Any]]:
    def integer(name: str, default: int, maximum: int, text: str) -> dict[str, Any]:
        schema = {"type": "integer", "minimum": 1, "maximum": maximum, "default": default}
        return {
            "name": name,
            "in": "query",
            "required": False,
            "description": text,
            "schema": schema,
        }

    instant = {
        "anyOf": [{"type": "string", "format": "date-time"}, {"type": "string", "format": "date"}]
    }
    parameters = [
        integer("page", 1, MAX_PAGE, "1-based page."),
        integer("page_size", DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, "Records per page."),
        _fields_parameter(ds),
        {
            "name": "store_ids",
            "in": "query",
            "required": False,
            "description": "Comma-separated store ids; narrows within the key's stores.",
            "schema": {"type": "array", "minItems": 1, "items": NON_EMPTY},
            "style": "form",
            "explode": False,
        },
        {
            "name": "created_at_min",
            "in": "query",
            "required": False,
            "description": "Records created at or after this instant (a date: midnight UTC; "
            "no zone: UTC).",
            "schema": instant,
        },
        {
            "name": "created_at_max",
            "in": "query",
            "required": False,
            "description": "Records created before this instant (exclusive).",
            "schema": instant,
        },
    ]
    for item in ds.record_fields:
        parameters.append(
            {
                "name": item.name,
                "in": "query",
                "required": False,
                "description": f"Equality filter on {item.name} ({_FILTER_HELP[item.type]}). "
                "Comma-separated values or a repeated parameter mean OR; a value in double "
                'quotes is literal ("a,b"); the bare word null matches a missing value.',
                "schema": {
                    "type": "array",
                    "items": filter_schema(field_type(ds, item), item.values),
                },
                "style": "form",
                "explode": True,
            }
        )
    return parameters


# A fraction of a second in ISO 8601 text (of the time or of an offset): fromisoformat
# reads seven digits and more, dropping those past the microsecond the warehouse keeps.
_FRACTION = re.compile(r"[.,](\d+)")
_INSTANT_PARAMETERS = ("created_at_min", "created_at_max")


def refuse_lossy_instants(ds: Dataset, params: list[tuple[str, str]]) -> None:
    """A 400 naming the parameter for timestamp text that would be read as another
    instant: a control character (fromisoformat stops at a NUL and ignores what follows)
    or a fraction finer than the microsecond (silently truncated)."""
    for name, raw in params:
        found = ds.field(name)
        if name not in _INSTANT_PARAMETERS and (found is None or found.type != "date"):
            continue
        items = [raw] if name in _INSTANT_PARAMETERS else split_items(raw, name)
        for item in items:
            if not isinstance(item, str):  # the bare word null
                continue
            if not item.isprintable():
                raise invalid(name, f"{item!r} holds a control character")
            digits = max((len(m.group(1)) for m in _FRACTION.finditer(item)), default=0)
            if digits > MICROSECOND_DIGITS:
                raise invalid(
                    name,
                    f"{item!r} has {digits} fractional digits; timestamps are kept to the "
                    f"microsecond ({MICROSECOND_DIGITS} digits)",
                )


def _list_endpoint(ds: Dataset) -> Callable[..., Response]:
    def list_dataset(request: Request, principal: ReadPrincipal, reader: ReaderDep) -> Response:
        params = request.query_params.multi_items()
        refuse_lossy_instants(ds, params)
        query = parse_list_params(ds, params)
        stores = principal.reads(query.store_ids)
        with _cursor(reader, stores) as cursor:
            page = list_records(cursor, query, stores)
        return records_page_response(page)

    list_dataset.__name__ = f"list_{ds.name}"
    list_dataset.__doc__ = (
        f"A page of {ds.name}, ordered by created_at then id, filtered by any record field. "
        "Unknown parameters are a 400; `has_more` says whether to ask for the next page."
    )
    return list_dataset


def _get_endpoint(ds: Dataset) -> Callable[..., Response]:
    def get_one(
        request: Request, record_id: str, principal: ReadPrincipal, reader: ReaderDep
    ) -> Response:
        fields = parse_record_params(ds, request.query_params.multi_items())
        stores = principal.store_ids
        with _cursor(reader, stores) as cursor:
            return raw_json_response(get_record(cursor, ds, record_id, fields, stores))

    get_one.__name__ = f"get_{ds.name}_record"
    get_one.__doc__ = (
        f"One {ds.name} record, without a `data` wrapper. An unknown id and an id in a store "
        "the key cannot read give the same 404."
    )
    return get_one


for _name in RECORD_DATASETS:
    _ds = record_dataset(_name)
    _record = record_model(_ds)
    router.add_api_route(
        f"/{_ds.name}",
        _list_endpoint(_ds),
        methods=["GET"],
        response_model=page_model(_ds, _record),
        responses=problem_responses(*AUTHENTICATED),
        summary=f"List {_ds.title.lower()}",
        openapi_extra={"parameters": _list_parameters(_ds)},
    )
    router.add_api_route(
        f"/{_ds.name}/{{record_id}}",
        _get_endpoint(_ds),
        methods=["GET"],
        response_model=_record,
        responses=problem_responses(*AUTHENTICATED, 404),
        summary=f"One {_ds.title.lower().rstrip('s')} by id",
        openapi_extra={"parameters": [_fields_parameter(_ds)]},
    )
