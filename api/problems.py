"""The one place errors become responses: every QuarryError, Starlette's and FastAPI's own
errors and anything unexpected are rendered as RFC 7807 application/problem+json."""

from __future__ import annotations

import json
import logging
import re
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from sqlalchemy.exc import InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect
from starlette.responses import Response

from quarry.errors import (
    InvalidRequest,
    QuarryError,
    RangeNotSatisfiable,
    RateLimited,
    ServiceUnavailable,
    Unauthorized,
)

PROBLEM_MEDIA_TYPE = "application/problem+json"
# Titles of statuses that Starlette raises itself (unknown path, wrong method).
_TITLES = {404: "Not found", 405: "Method not allowed", 500: "Internal error"}
# A server error's own message may name paths or hosts; the client gets this instead and
# the log gets the real one.
INTERNAL_DETAIL = "The server could not answer this request; the error has been logged."
# Server statuses whose detail we write ourselves and which hold no secrets: a dependency
# being down (503) and a query past its time limit, which names the limit (504).
_PUBLIC_SERVER_DETAILS = (503, 504)
# Retry-After of a 503: a dependency coming back (a database failover, a restart) takes
# seconds; a client asking again sooner only adds load.
RETRY_AFTER_UNAVAILABLE = 10
# What the registry's driver raises when its database cannot be reached or answered: a
# refused or dropped connection, or no pooled connection free in time.
REGISTRY_UNREACHABLE = (OperationalError, InterfaceError, PoolTimeout)

logger = logging.getLogger("api.errors")


def problem_type(title: str) -> str:
    """The problem's `type`: a URN per title, e.g. urn:quarry:problem:insufficient-scope
    (listed in docs/api.md, "Errors")."""
    return "urn:quarry:problem:" + re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


def problem_body(error: QuarryError, instance: str | None) -> dict[str, Any]:
    hidden = (
        error.status >= 500
        and error.status not in _PUBLIC_SERVER_DETAILS
        and not error.public_detail
    )
    detail = INTERNAL_DETAIL if hidden else error.detail
    body: dict[str, Any] = {
        "type": problem_type(error.title),
        "title": error.title,
        "status": error.status,
        "detail": detail,
    }
    if instance is not None:
        body["instance"] = instance
    if error.errors:
        body["errors"] = error.errors
    return body


def problem_response(
    error: QuarryError, instance: str | None, headers: dict[str, str] | None = None
) -> Response:
    """`error` as a problem+json response, with the headers its status calls for."""
    extra = dict(headers or {})
    if isinstance(error, Unauthorized):
        extra["WWW-Authenticate"] = "Bearer"
    if error.status == 413:
        # The rest of an oversized body is not wanted: the server stops reading it.
        extra["Connection"] = "close"
    if error.status == 503:
        extra.setdefault("Retry-After", str(RETRY_AFTER_UNAVAILABLE))
    if isinstance(error, RangeNotSatisfiable):
        extra["Content-Range"] = f"bytes */{error.size}"  # RFC 9110 15.5.17
    if isinstance(error, RateLimited):
        extra["Retry-After"] = str(max(1, error.retry_after))
        extra["X-RateLimit-Limit"] = str(error.limit)
    body = json.dumps(problem_body(error, instance), ensure_ascii=False, separators=(",", ":"))
    return Response(
        body.encode(), status_code=error.status, headers=extra, media_type=PROBLEM_MEDIA_TYPE
    )


def internal_error_response(path: str) -> Response:
    return problem_response(QuarryError(INTERNAL_DETAIL), path)


async def _quarry_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, QuarryError)
    if exc.status >= 500:
        logger.error("%s %s failed: %s", request.method, request.url.path, exc.detail)
    return problem_response(exc, request.url.path)


async def http_error(request: Request, exc: Exception) -> Response:
    """Starlette's own errors (unknown path, wrong method) as problems."""
    assert isinstance(exc, StarletteHTTPException)
    status = exc.status_code
    try:
        phrase, description = HTTPStatus(status).phrase, HTTPStatus(status).description
    except ValueError:  # a status outside the standard list
        phrase, description = f"HTTP {status}", f"HTTP {status}"
    title = _TITLES.get(status, phrase)
    headers = dict(exc.headers or {})
    detail = exc.detail if isinstance(exc.detail, str) and exc.detail else description
    # Starlette's own 404 and 405 carry only the phrase; say what was asked instead.
    if status == 404 and detail == phrase:
        detail = f"nothing is served at {request.url.path}"
    elif status == 405 and detail == phrase:
        detail = f"{request.method} is not allowed here; allowed: {headers.get('Allow', '')}"
    error = QuarryError(detail, status=status, title=title)
    return problem_response(error, request.url.path, headers)


async def _validation_error(request: Request, exc: Exception) -> Response:
    """FastAPI's own 422 becomes our 400 "Invalid request" with `errors[].field`."""
    assert isinstance(exc, RequestValidationError)
    errors = []
    for item in exc.errors():
        location = [str(part) for part in item.get("loc", ())]
        field = ".".join(location[1:]) or (location[0] if location else "request")
        if item.get("type") == "json_invalid":  # its loc ends in a character offset
            field = "body"
        errors.append({"field": field, "message": str(item.get("msg", "is not valid"))})
    detail = "; ".join(f"{e['field']}: {e['message']}" for e in errors) or "invalid request"
    error = QuarryError(detail, errors=errors, status=400, title="Invalid request")
    return problem_response(error, request.url.path)


async def _client_gone(request: Request, exc: Exception) -> Response:
    """The client went away while its body was read (or the server closed a stalled one,
    api.connections): no error of ours, and nobody to answer."""
    logger.info("%s %s: the client disconnected mid-request", request.method, request.url.path)
    message = "the client disconnected before its request was complete"
    return problem_response(InvalidRequest(message), request.url.path)


async def _registry_unreachable(request: Request, exc: Exception) -> Response:
    """The registry's database is down or unreachable: a 503 to retry, never a 500 and
    never a 401 (a key that cannot be checked is not an unknown key)."""
    logger.error(
        "%s %s: the registry cannot be reached: %s",
        request.method,
        request.url.path,
        str(exc).splitlines()[0] if str(exc) else type(exc).__name__,
    )
    error = ServiceUnavailable(
        f"the registry cannot be reached; retry in {RETRY_AFTER_UNAVAILABLE} seconds"
    )
    return problem_response(error, request.url.path)


async def _unexpected(request: Request, exc: Exception) -> Response:
    logger.exception("%s %s failed", request.method, request.url.path, exc_info=exc)
    return internal_error_response(request.url.path)


def install_problem_handlers(app: FastAPI) -> None:
    """Register the handlers; api.middleware renders what escapes them."""
    app.add_exception_handler(QuarryError, _quarry_error)
    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(ClientDisconnect, _client_gone)
    for unreachable in REGISTRY_UNREACHABLE:
        app.add_exception_handler(unreachable, _registry_unreachable)
    app.add_exception_handler(Exception, _unexpected)
