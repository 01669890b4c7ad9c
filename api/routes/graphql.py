"""POST /admin/api/{version}/graphql.json: ShopifyQL clients (Shopify's `shopifyql` SDK,
MCP servers, reporting apps) pointed at Quarry by changing one URL.

Outside /v1 and shaped like Shopify's Admin API rather than the contract: the key comes in
`X-Shopify-Access-Token` (or as a Bearer), any YYYY-MM version or `unstable` is accepted,
and refusals are answered as Shopify answers them: a missing or bad key is a 401 with
`{"errors": "[API] Invalid API key or access token ..."}`, a key without `read_data` or on
a plan without the API gets a GraphQL `ACCESS_DENIED` error, a spent rate limit a 429 with
`Retry-After`. Each `shopifyqlQuery` of a document after the first is charged one more
request; one the limit no longer covers is a `THROTTLED` error in the response, as Shopify
reports a throttled query. The same store scope, plan gating, rate limit, engine and figures as
POST /v1/query (api.routes.query.query_result).
"""

from __future__ import annotations

import re
from typing import Any

from fastapi import APIRouter, Request
from pydantic_core import from_json
from starlette.concurrency import run_in_threadpool
from starlette.responses import JSONResponse, Response

from api.auth import charge, principal_of_key
from api.deps import CacheDep, LimitsDep, ReaderDep
from api.routes.query import query_result
from api.shopifyql_graphql import execute
from quarry.errors import RateLimited, Unauthorized
from warehouse.query import QueryResult

router = APIRouter(tags=["shopifyql"])

# Shopify's versions: a YYYY-MM release, or `unstable` (its preview of the next one).
VERSION = re.compile(r"^(\d{4}-(0[1-9]|1[0-2])|unstable)$")
INVALID_KEY = "[API] Invalid API key or access token (unrecognized login or wrong password)"
SCOPE = "read_data"


TWICE = "[API] Send the access token once: one X-Shopify-Access-Token or Authorization header"


def _secret(request: Request) -> str | None:
    """The key the request presents; Unauthorized(TWICE) when it presents more than one,
    since which one counts would depend on the parser (as /v1 refuses two Authorization
    headers)."""
    tokens = request.headers.getlist("x-shopify-access-token")
    authorizations = request.headers.getlist("authorization")
    bearers = []
    for authorization in authorizations:
        scheme, _, value = authorization.partition(" ")
        if scheme.lower() == "bearer" and value.strip():
            bearers.append(value.strip())
    if len(tokens) > 1 or len(authorizations) > 1 or (tokens and bearers):
        raise Unauthorized(TWICE)
    presented = tokens or bearers
    return presented[0] or None if presented else None


def _denied(message: str) -> JSONResponse:
    return JSONResponse({"errors": [{"message": message, "extensions": {"code": "ACCESS_DENIED"}}]})


def _errors(description: str, errors: dict[str, Any]) -> dict[str, Any]:
    schema = {"type": "object", "properties": {"errors": errors}, "required": ["errors"]}
    return {"description": description, "content": {"application/json": {"schema": schema}}}


_TEXT = {"type": "string"}
_LIST = {"type": "array", "items": {"type": "object", "properties": {"message": _TEXT}}}


@router.post(
    "/admin/api/{version}/graphql.json",
    summary="ShopifyQL through Shopify's Admin GraphQL shape (shopifyqlQuery)",
    response_class=JSONResponse,
    responses={
        200: {
            "description": "A GraphQL response: `data`, and `errors` when there are any.",
            "content": {
                "application/json": {
                    "schema": {
                        "type": "object",
                        "properties": {"data": {"type": ["object", "null"]}, "errors": _LIST},
                    }
                }
            },
        },
        400: _errors("The body is not a GraphQL request.", _LIST),
        401: _errors("Invalid API key or access token, as Shopify answers it.", _TEXT),
        404: _errors("The version is neither YYYY-MM nor unstable.", _TEXT),
        429: {
            **_errors("The key's rate limit is spent.", _TEXT),
            "headers": {"Retry-After": {"schema": {"type": "integer"}}},
        },
    },
    openapi_extra={
        "parameters": [
            {
                "name": "X-Shopify-Access-Token",
                "in": "header",
                "required": False,
                "schema": {"type": "string"},
            },
        ],
        "requestBody": {
            "required": True,
            "content": {
                "application/json": {
                    "schema": {
                        "type": "object",
                        "properties": {
                            "query": _TEXT,
                            "variables": {"type": ["object", "null"]},
                            "operationName": {"type": ["string", "null"]},
                        },
                        "required": ["query"],
                    }
                }
            },
        },
    },
)
async def admin_graphql(
    version: str,
    request: Request,
    reader: ReaderDep,
    limits: LimitsDep,
    cache: CacheDep,
) -> Response:
    """`{query, variables, operationName}` answered with `{data, errors}`; only
    `shopifyqlQuery` and `currentAppInstallation` exist (docs/query-language.md)."""
    if not VERSION.match(version):
        return JSONResponse({"errors": "Not Found"}, status_code=404)
    try:
        secret = _secret(request)
    except Unauthorized:
        return JSONResponse({"errors": TWICE}, status_code=401)
    try:
        if secret is None:
            raise Unauthorized("no key")
        principal = principal_of_key(request, secret)
    except Unauthorized:
        return JSONResponse({"errors": INVALID_KEY}, status_code=401)
    except RateLimited as limited:
        return JSONResponse(
            {"errors": "Exceeded the rate limit of this API key; retry later."},
            status_code=429,
            headers={"Retry-After": str(limited.retry_after)},
        )
    raw = await request.body()
    try:
        # pydantic's parser, as /v1's bodies: it stops at 200 levels of nesting with a
        # ValueError, where `json.loads` raised RecursionError (a 500) on a deep body.
        body = from_json(raw or b"null")
    except ValueError as invalid:
        return JSONResponse(
            {"errors": [{"message": f"the body is not valid JSON: {invalid}"}]},
            status_code=400,
        )
    if not isinstance(body, dict) or not isinstance(body.get("query"), str):
        return JSONResponse(
            {"errors": [{"message": "the body must be JSON with a `query` string"}]},
            status_code=400,
        )
    variables = body.get("variables")
    operation = body.get("operationName")
    if variables is not None and not isinstance(variables, dict):
        return JSONResponse({"errors": [{"message": "`variables` must be an object"}]}, 400)
    if not principal.api_enabled:
        return _denied("the account's plan does not include API access")
    if SCOPE not in principal.scopes:
        return _denied(
            "Access denied for shopifyqlQuery field. Required access: a Quarry key with "
            f"the `{SCOPE}` scope (Shopify's `read_reports`)."
        )
    store_ids = principal.reads(None)
    # rowMetadata.rawResourceIds: the stores behind each `store` value (named, not ids).
    stores_named: dict[str, list[str]] = {}
    for store in principal.stores:
        if store.id in store_ids:
            stores_named.setdefault(store.name, []).append(store.id)

    asked = 0

    def answer(query: str) -> QueryResult:
        # The request's charge paid for one query: aliases would otherwise run any number
        # of them for one request of the key's rate limit.
        nonlocal asked
        asked += 1
        if asked > 1:
            charge(request, principal)
        return query_result(query, None, principal, store_ids, reader, limits, cache)

    def run() -> dict[str, Any]:
        return execute(
            body["query"],
            variables,
            operation if isinstance(operation, str) else None,
            answer,
            principal.scopes,
            {"store": stores_named},
        )

    return JSONResponse(await run_in_threadpool(run))
