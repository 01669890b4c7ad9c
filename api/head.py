"""HEAD on any GET endpoint answers as GET does, without the body (RFC 9110, 9.3.2).

FastAPI routes answer only the methods they declare, and declaring HEAD on each route
would document every GET twice in /openapi.json. This pure ASGI middleware instead runs a
HEAD request as a GET when a GET route matches its path, and sends the GET's status and
headers (Content-Length included) with an empty body. A HEAD that matches no GET route
goes through as HEAD, so its 404 or 405 names the method asked for.
"""

from __future__ import annotations

from starlette.routing import Match, Router
from starlette.types import ASGIApp, Message, Receive, Scope, Send


class HeadAsGetMiddleware:
    def __init__(self, app: ASGIApp, router: Router) -> None:
        self.app = app
        self.router = router

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return
        as_get = {**scope, "method": "GET"}
        if not any(route.matches(as_get)[0] is Match.FULL for route in self.router.routes):
            await self.app(scope, receive, send)
            return

        async def send_without_body(message: Message) -> None:
            if message["type"] == "http.response.body":
                message = {**message, "body": b""}
            await send(message)

        await self.app(as_get, receive, send_without_body)
