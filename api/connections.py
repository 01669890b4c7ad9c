"""Deadlines on slow clients for `quarry serve`: uvicorn's HTTP protocols with two timers.

uvicorn's only timer is the keep-alive one, and any byte received cancels it, so a client
that trickles a header a byte at a time, or stops half-way through a body, holds its
connection for ever. ASGI middleware cannot help: it runs once the headers are complete.
Here, per connection:

- the request headers must be complete within QUARRY_HEADER_TIMEOUT_SECONDS of the
  connection opening or of the previous response ending (a total, not per byte);
- while a body is incomplete, it may not stall for QUARRY_BODY_TIMEOUT_SECONDS (the timer
  restarts with every read), unless the server itself stopped reading because the app has
  not consumed what it holds.

Past either, the connection is closed. uvicorn takes these classes by import string
(`--http api.connections:HttpToolsDeadlines`), so every worker process builds its own and
reads the two settings from its environment on its first connection.
"""

from __future__ import annotations

import asyncio
import logging
from functools import cache
from typing import Any, Literal

from uvicorn.protocols.http.h11_impl import H11Protocol

from quarry.settings import load_settings

logger = logging.getLogger("uvicorn.error")

Phase = Literal["headers", "body"]


@cache
def deadlines() -> tuple[float, float]:
    """(header timeout, body stall timeout) in seconds, read once per process."""
    settings = load_settings()
    return settings.header_timeout_seconds, settings.body_timeout_seconds


class _Deadlines:
    """The timers, over any uvicorn HTTP protocol with `transport`, `cycle` (the current
    request: `more_body`, `response_complete`), `flow` and `loop`."""

    transport: asyncio.Transport
    cycle: Any
    flow: Any
    loop: asyncio.AbstractEventLoop

    _timer: asyncio.TimerHandle | None = None
    _phase: Phase | None = None
    # The request whose headers were last seen complete.
    _request: Any = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)  # type: ignore[misc]
        self._follow()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)  # type: ignore[misc]
        self._follow(read=True)

    def on_response_complete(self) -> None:
        super().on_response_complete()  # type: ignore[misc]
        self._follow()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel()
        super().connection_lost(exc)  # type: ignore[misc]

    def _follow(self, read: bool = False) -> None:
        """Set the timer for where the connection stands now."""
        if self.transport is None or self.transport.is_closing():
            self._cancel()
            return
        cycle = self.cycle
        if cycle is None or (cycle is self._request and cycle.response_complete):
            # Between requests: the next one's headers are due. A total, so data that does
            # not complete them leaves the running timer alone.
            if self._phase != "headers":
                self._arm("headers")
            return
        self._request = cycle
        if cycle.more_body and not cycle.response_complete:
            if read or self._phase != "body":
                self._arm("body")
        else:
            # The whole request is in: the app may take as long as it needs to answer.
            self._cancel()

    def _arm(self, phase: Phase) -> None:
        self._cancel()
        header_timeout, body_timeout = deadlines()
        delay = header_timeout if phase == "headers" else body_timeout
        self._phase = phase
        self._timer = self.loop.call_later(delay, self._expire, phase)

    def _cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = None
        self._phase = None

    def _expire(self, phase: Phase) -> None:
        self._timer = None
        self._phase = None
        if self.transport.is_closing():
            return
        if phase == "body" and self.flow.read_paused:
            # The server stopped reading (the app has not consumed the body yet): the
            # client is not the one stalling.
            self._arm("body")
            return
        header_timeout, body_timeout = deadlines()
        what = (
            f"request headers not complete within {header_timeout:g} s"
            if phase == "headers"
            else f"request body stalled for {body_timeout:g} s"
        )
        client = self.transport.get_extra_info("peername")
        logger.warning("closing the connection of %s: %s", client, what)
        self.transport.close()


class H11Deadlines(_Deadlines, H11Protocol):
    """uvicorn's pure-Python protocol, with the deadlines."""


try:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
except ImportError:  # httptools is optional: uvicorn falls back to h11 the same way
    HttpToolsDeadlines: type[asyncio.Protocol] = H11Deadlines
else:

    class HttpToolsDeadlines(_Deadlines, HttpToolsProtocol):  # type: ignore[no-redef]
        """uvicorn's default protocol when httptools is installed, with the deadlines."""


# What `quarry serve` passes to uvicorn as `http`: the protocol uvicorn's "auto" picks.
PROTOCOL = "api.connections:HttpToolsDeadlines"
