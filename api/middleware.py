"""Headers every response carries, and the last line of defence for errors.

A pure ASGI middleware (no per-request objects beyond a closure): it adds
`Cache-Control: no-store`, `X-Request-Id` (api.request_ids) and the rate-limit headers the
auth dependency recorded in the request's state, to success and error responses alike, and
turns an exception that escaped every handler into a 500 problem without a traceback.
"""

from __future__ import annotations

import logging
from typing import Any

from starlette.datastructures import Headers, MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api.problems import internal_error_response
from api.ratelimit import Decision
from api.request_ids import HEADER, REQUEST_ID, request_id_for

logger = logging.getLogger("api.errors")


class ResponseHeadersMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        # Request.state of the routes is this same dict.
        state: dict[str, Any] = scope.setdefault("state", {})
        started = False
        given = Headers(scope=scope).get(HEADER)
        request_id = request_id_for(given)
        token = REQUEST_ID.set(request_id)

        async def send_with_headers(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                headers = MutableHeaders(scope=message)
                headers["Cache-Control"] = "no-store"
                headers[HEADER] = request_id
                decision: Decision | None = state.get("rate_limit")
                if decision is not None:
                    headers["X-RateLimit-Limit"] = str(decision.limit)
                    headers["X-RateLimit-Remaining"] = str(decision.remaining)
                    headers["X-RateLimit-Reset"] = str(decision.reset_at())
            await send(message)

        try:
            await self.app(scope, receive, send_with_headers)
        except Exception:
            logger.exception("%s %s failed", scope.get("method"), scope.get("path"))
            if started:
                raise
            response = internal_error_response(scope.get("path", ""))
            await response(scope, receive, send_with_headers)
        finally:
            REQUEST_ID.reset(token)
