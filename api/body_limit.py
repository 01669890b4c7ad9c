"""The cap on request bodies (QUARRY_MAX_BODY_BYTES), on every path.

A pure ASGI middleware in front of routing, so no route can read past the cap: a
`Content-Length` above it is refused before anything is read, and a body sent without one
(chunked) is counted as it arrives and refused at the first chunk that crosses the cap.
Either way the answer is a 413 problem that closes the connection, since the rest of the
body is not wanted.
"""

from __future__ import annotations

from dataclasses import dataclass

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api.problems import problem_response
from quarry.errors import QuarryError


@dataclass
class RequestTooLarge(QuarryError):
    status: int = 413
    title: str = "Request too large"


def too_large(limit: int) -> RequestTooLarge:
    return RequestTooLarge(f"the request body is larger than {limit:,} bytes, the limit")


class BodyLimitMiddleware:
    def __init__(self, app: ASGIApp, max_body_bytes: int) -> None:
        self.app = app
        self.limit = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.limit:
            await self._refuse(scope, receive, send)
            return
        received = 0
        started = False

        async def counted_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:
                    # The route's problem handler renders it (a QuarryError); below is the
                    # fallback for a reader that lets it escape.
                    raise too_large(self.limit)
            return message

        async def tracked_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, counted_receive, tracked_send)
        except RequestTooLarge:
            if started:
                raise
            await self._refuse(scope, receive, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        await problem_response(too_large(self.limit), scope.get("path", ""))(scope, receive, send)


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            # The server has already refused a malformed value; this is belt and braces.
            return int(value) if value.isdigit() else None
    return None
