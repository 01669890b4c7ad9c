"""X-Request-Id: every response carries one, and so does every log record written while
the request is served (the record attribute `request_id`, "-" outside a request).

A client's own id is echoed when it is sane (1 to 128 characters of letters, digits and
`._:/+=-`), so a caller can follow its request through our logs; anything else is replaced
by a fresh one rather than written to a log line or a header verbatim.
"""

from __future__ import annotations

import contextvars
import logging
import re
import threading
import uuid
from typing import Any

HEADER = "X-Request-Id"
REQUEST_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar("request_id", default=None)
_SANE = re.compile(r"^[A-Za-z0-9._:/+=-]{1,128}$")
# uvicorn's default access line, and the same with the request id at the end.
UVICORN_ACCESS_FORMAT = '%(levelprefix)s %(client_addr)s - "%(request_line)s" %(status_code)s'
ACCESS_FORMAT = (
    '%(levelprefix)s %(client_addr)s - "%(request_line)s" %(status_code)s %(request_id)s'
)

_lock = threading.Lock()
_installed = False


def request_id_for(given: str | None) -> str:
    """The id of a request: the client's when sane, else a new one."""
    if given is not None and _SANE.match(given):
        return given
    return uuid.uuid4().hex


def install() -> None:
    """Give every log record of this process its request id, and show it in uvicorn's
    access log when that log has uvicorn's default format (an operator's own log
    configuration is left as it is: `%(request_id)s` puts the id in it). Idempotent."""
    global _installed
    with _lock:
        if _installed:
            return
        previous = logging.getLogRecordFactory()

        def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
            record = previous(*args, **kwargs)
            record.request_id = REQUEST_ID.get() or "-"
            return record

        logging.setLogRecordFactory(factory)
        _installed = True
    try:
        from uvicorn.logging import AccessFormatter
    except ImportError:  # uvicorn is what serves the app; without it there is no access log
        return
    for handler in logging.getLogger("uvicorn.access").handlers:
        formatter = handler.formatter
        if isinstance(formatter, AccessFormatter) and formatter._fmt == UVICORN_ACCESS_FORMAT:
            handler.setFormatter(AccessFormatter(ACCESS_FORMAT, use_colors=formatter.use_colors))
