"""Key secrets never reach a log line.

We never log the Authorization header ourselves; what remains is a key a client put where
it does not belong, such as a query string, which uvicorn's access log writes verbatim.
A filter on the server's loggers and handlers masks anything shaped like a key.
"""

from __future__ import annotations

import logging
import re

from registry.keys import KEY_PREFIX

_SECRET = re.compile(re.escape(KEY_PREFIX) + r"[0-9A-Za-z]{6,}")
_BEARER = re.compile(r"(?i)(bearer\s+)\S+")
MASK = KEY_PREFIX + "[redacted]"
_LOGGERS = ("", "uvicorn", "uvicorn.access", "uvicorn.error", "api", "fastapi")


def redact(text: str) -> str:
    """`text` with every key-shaped token and Bearer credential masked."""
    return _BEARER.sub(r"\1[redacted]", _SECRET.sub(MASK, text))


class SecretFilter(logging.Filter):
    """Masks secrets in a record's message and arguments, keeping their shape: uvicorn's
    access formatter unpacks the argument tuple, so it must stay a tuple."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = redact(record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(_clean(value) for value in record.args)
        elif isinstance(record.args, dict):
            record.args = {name: _clean(value) for name, value in record.args.items()}
        return True


def _clean(value: object) -> object:
    return redact(value) if isinstance(value, str) else value


def install_secret_filter() -> None:
    """Attach the filter to the server's loggers and their handlers (idempotent). Logger
    filters only see records logged to that very logger, handler filters see propagated
    ones, so both."""
    for name in _LOGGERS:
        logger = logging.getLogger(name)
        targets: list[logging.Filterer] = [logger, *logger.handlers]
        for target in targets:
            if not any(isinstance(f, SecretFilter) for f in target.filters):
                target.addFilter(SecretFilter())
