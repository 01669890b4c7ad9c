"""The OpenAPI document: every route's problem responses as application/problem+json with
the one Problem schema, and no trace of FastAPI's 422 (its errors are our 400)."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from api.problems import PROBLEM_MEDIA_TYPE
from api.schemas import Problem

_DESCRIPTIONS = {
    400: "Invalid request: `errors` names each offending parameter or field.",
    401: "Unauthorized: missing, malformed, unknown or revoked key (`WWW-Authenticate: Bearer`).",
    403: "Plan upgrade required, or Insufficient scope.",
    404: "Not found.",
    409: "Conflict.",
    410: "Gone: the download link has expired.",
    416: "Range not satisfiable: the Range starts past the end (`Content-Range: bytes */{size}`).",
    422: "Unprocessable export.",
    429: "Too many requests: `Retry-After` and `X-RateLimit-Limit` say when and what.",
    500: "Internal error.",
    503: "Service unavailable: a required dependency cannot be reached.",
}
# What every authenticated /v1 route may answer besides its own (503: the registry that
# holds the keys cannot be reached).
AUTHENTICATED = (400, 401, 403, 429, 500, 503)


def problem_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """`responses=` for a route: each status documented as a Problem."""
    return {
        status: {"model": Problem, "description": _DESCRIPTIONS.get(status, "Problem.")}
        for status in statuses
    }


def build_openapi(app: FastAPI) -> dict[str, Any]:
    """The schema, built once and cached on the app as FastAPI does."""
    if app.openapi_schema:
        return app.openapi_schema
    schema = get_openapi(
        title=app.title,
        version=app.version,
        description=app.description,
        routes=app.routes,
    )
    for path, path_item in schema.get("paths", {}).items():
        for operation in path_item.values():
            responses = operation.get("responses", {})
            if _is_fastapi_422(responses.get("422")):
                del responses["422"]
            for status, response in responses.items():
                # /admin/... answers in Shopify's shape (api.routes.graphql), not problems.
                shopify_shaped = path.startswith("/admin/")
                if (
                    status.isdigit()
                    and int(status) >= 400
                    and "content" in response
                    and not shopify_shaped
                ):
                    content = response["content"]
                    media = content.pop("application/json", None) or {}
                    content.setdefault(PROBLEM_MEDIA_TYPE, media)
                if path.startswith("/v1/"):
                    # A route's own headers (the run's Location) stay, after the common ones.
                    response["headers"] = {**_headers(status), **response.get("headers", {})}
    components = schema.get("components", {}).get("schemas", {})
    for name in ("HTTPValidationError", "ValidationError"):
        components.pop(name, None)
    app.openapi_schema = schema
    return schema


def _header(description: str, type_: str = "integer") -> dict[str, Any]:
    return {"description": description, "schema": {"type": type_}}


def _headers(status: str) -> dict[str, Any]:
    """Headers of a /v1 response: the rate limit's when it is on (so never required)."""
    headers = {
        "X-RateLimit-Limit": _header("Requests allowed per window (QUARRY_RATE_LIMIT)."),
        "X-RateLimit-Remaining": _header("Requests left in the key's bucket."),
        "X-RateLimit-Reset": _header("UTC epoch seconds when the key's budget is whole again."),
        "X-Request-Id": _header(
            "The request's id: the client's own X-Request-Id when sane, else a new one.",
            "string",
        ),
        "Cache-Control": _header("Always `no-store`.", "string"),
    }
    if status in ("429", "503"):
        headers["Retry-After"] = _header("Whole seconds to wait, at least 1.")
    if status == "401":
        headers["WWW-Authenticate"] = _header("`Bearer`.", "string")
    return headers


def _is_fastapi_422(response: dict[str, Any] | None) -> bool:
    if not response:
        return False
    ref = str(response.get("content", {}).get("application/json", {}).get("schema", {}))
    return "HTTPValidationError" in ref
