"""POST /v1/query: a query in the service's language, answered as one flat table.

HTTP only: the body is read after the key checks, Accept picks JSON or CSV, and the query
goes to warehouse.query.answer in a worker thread (DuckDB blocks), which checks it once
and answers through the app's result cache (api.query_cache). Query errors, timeouts and
missing rates are domain errors that the one problem handler renders.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter, Request
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from api.deps import CacheDep, LimitsDep, NoParameters, ReaderDep, ReadPrincipal
from api.json import JSON_MEDIA_TYPE, json_response
from api.openapi import AUTHENTICATED, problem_responses
from api.query_cache import QueryCache, QueryKey
from api.schemas import QueryRequest, QueryResult
from exports.files.csv_writer import csv_text
from quarry.errors import InvalidRequest, NotAcceptable
from registry.principals import Principal
from warehouse.query import Limits, QueryContext, StoreInfo, answer
from warehouse.query import QueryResult as Result
from warehouse.query.plan import Plan
from warehouse.reader import WarehouseReader

router = APIRouter(prefix="/v1", tags=["query"])

CSV_MEDIA_TYPE = "text/csv"
SOURCE_HEADER = "X-Quarry-Source"
# What the endpoint can answer, in its order of preference when Accept ranks them equally.
_OFFERS = (JSON_MEDIA_TYPE, CSV_MEDIA_TYPE)


def negotiate(accept: str | None) -> str | None:
    """The media type to answer with for an Accept header, or None when it allows neither
    JSON nor CSV. Each offer takes the q of the most specific range matching it (RFC 9110,
    12.5.1); the highest q wins, then the more specific match, then JSON."""
    if accept is None or not accept.strip():
        return JSON_MEDIA_TYPE
    ranked: dict[str, tuple[float, int]] = {}
    for item in accept.split(","):
        media, *params = (part.strip() for part in item.split(";"))
        media = media.lower()
        q = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    q = min(max(float(value), 0.0), 1.0)
                except ValueError:
                    q = 0.0  # a range we cannot read grants nothing
        for offer in _OFFERS:
            if media == offer:
                specificity = 2
            elif media == offer.split("/")[0] + "/*":
                specificity = 1
            elif media == "*/*":
                specificity = 0
            else:
                continue
            if specificity > ranked.get(offer, (0.0, -1))[1]:
                ranked[offer] = (q, specificity)
    acceptable = [(q, spec, -_OFFERS.index(o), o) for o, (q, spec) in ranked.items() if q > 0]
    return max(acceptable)[3] if acceptable else None


async def read_body(request: Request) -> QueryRequest:
    """The JSON body, validated here rather than by FastAPI, which parses a body before
    any dependency runs: a broken body would then answer 400 before the key's 401 and
    without costing the key a request (docs/api.md: the request is checked last)."""
    content_type = request.headers.get("content-type")
    raw = await request.body()
    if content_type is not None:
        media = content_type.split(";")[0].strip().lower()
        if media != JSON_MEDIA_TYPE and not media.endswith("+json"):
            message = "send a JSON object with Content-Type: application/json"
            raise InvalidRequest(f"body: {message}", errors=[{"field": "body", "message": message}])
    try:
        return QueryRequest.model_validate_json(raw)
    except ValidationError as exc:
        # The one handler of validation errors renders them: {field, message} per error.
        raise RequestValidationError(
            [{**e, "loc": ("body", *e["loc"])} for e in exc.errors(include_url=False)]
        ) from exc


_RESPONSES: dict[int | str, dict[str, Any]] = {
    **problem_responses(*AUTHENTICATED, 406, 504),
    200: {
        "description": "The Query result; with `Accept: text/csv`, the same rows as CSV "
        "under a header of column titles (no totals row).",
        "content": {CSV_MEDIA_TYPE: {"schema": {"type": "string"}}},
    },
}
_RESPONSES[400]["description"] = (
    "Invalid request (the body; `errors[]` has {field, message}) or Invalid query "
    "(`errors[]` has {line, column, message, severity}, every problem of the query)."
)
_RESPONSES[406]["description"] = "Not acceptable: Accept allows neither JSON nor CSV."
_RESPONSES[500]["description"] = "Internal error, or Missing exchange rate."
_RESPONSES[504]["description"] = "Query timed out: the query ran past its time limit."


@router.post(
    "/query",
    response_model=QueryResult,
    responses=_RESPONSES,
    summary="Run a query",
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {JSON_MEDIA_TYPE: {"schema": QueryRequest.model_json_schema()}},
        }
    },
)
async def post_query(
    request: Request,
    principal: ReadPrincipal,
    reader: ReaderDep,
    limits: LimitsDep,
    cache: CacheDep,
    _: NoParameters,
) -> Response:
    """Runs a query over every store the key can read (narrowed by `store_ids`) and
    answers one flat table: JSON by default, CSV with `Accept: text/csv`."""
    media_type = negotiate(request.headers.get("accept"))
    if media_type is None:
        raise NotAcceptable(
            f"this endpoint answers {' or '.join(_OFFERS)}; the Accept header allows neither"
        )
    body = await read_body(request)
    store_ids = principal.reads(body.store_ids)

    def answered() -> Response:
        # One trip to the thread pool for the answer and its rendering: each trip costs a
        # thread switch, which a loaded machine makes dear (the fixed cost of a query).
        result = query_result(
            body.query, body.time_zone, principal, store_ids, reader, limits, cache
        )
        return _render(result, media_type)

    return await run_in_threadpool(answered)


def query_result(
    query: str,
    time_zone: str | None,
    principal: Principal,
    store_ids: tuple[str, ...],
    reader: WarehouseReader,
    limits: Limits,
    cache: QueryCache,
) -> Result:
    """A query's answer for a principal: the one path behind /v1/query and the
    shopifyqlQuery adapter (api.routes.graphql), through the result cache."""
    stores = {s.id: StoreInfo(s.name, s.currency, s.timezone) for s in principal.stores}
    context = QueryContext(
        stores,
        principal.currency,
        principal.timezone,
        time_zone,
        store_ids,
        now=datetime.now(UTC),  # one instant for the key and the run
    )

    def key(snapshot: str, plan: Plan) -> QueryKey:
        return QueryKey.of(
            snapshot=snapshot,
            query=query,
            stores=stores,
            store_ids=store_ids,
            account_currency=principal.currency,
            account_timezone=principal.timezone,
            time_zone=time_zone,
            plan=plan,
            limits=limits,
        )

    return answer(reader, query, context, limits, cache=cache, cache_key=key)


def _render(result: Result, media_type: str) -> Response:
    # The body depends on Accept: say so to any cache in between (no-store aside).
    # X-Quarry-Source: whether a rollup or the facts answered (docs/query-language.md).
    headers = {"Vary": "Accept", SOURCE_HEADER: result.source}
    if media_type == CSV_MEDIA_TYPE:
        titles, rows = result.table()
        text = csv_text(titles, rows)
        return Response(text.encode(), media_type=CSV_MEDIA_TYPE, headers=headers)
    response = json_response(result.public())
    response.headers.update(headers)
    return response
