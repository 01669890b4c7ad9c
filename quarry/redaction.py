"""Secrets never reach a log line: the one mechanism for every process.

Every log record created in the process is cleaned before any handler sees it:
- secrets a running block registered (`redacting`: a delivery's credentials, and the
  access tokens it obtains on the way) become `***`;
- text shaped like a secret (`SHAPES`, and shapes a role adds with `mask_shape`, such as
  the API's keys) keeps its visible prefix and loses the rest: `Bearer ***`.
Libraries we call log what they send (botocore signed headers, httpx upload addresses,
uvicorn's access log a key a client put in the query string), and we cannot change what
they log. A LogRecord factory rather than filters: a logger's filter misses records of its
children, a handler's filter misses handlers added later (pytest's caplog, Dagster's).
Records keep their shape: arguments are cleaned one by one, because uvicorn's access
formatter unpacks its argument tuple. An exception's traceback (its message often quotes
what failed: a URL, a login) is rendered once, cleaned, into the record's `exc_text`, which
every standard formatter writes as it is (quarry.logs' JSON lines too).
"""

from __future__ import annotations

import logging
import re
import threading
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

MASK = "***"
# Shorter strings (a port, "yes") would mask innocent text and protect nothing.
MIN_SECRET_LENGTH = 6

# Group 1 is what stays visible. Some secrets are logged before we have seen them, so
# they cannot be registered in time: httpcore logs response headers (a resumable upload's
# Location carries its upload_id) as soon as they arrive.
SHAPES = [
    re.compile(r"(upload_id=)[A-Za-z0-9_.~%-]+"),
    re.compile(r"(Bearer\s+)[A-Za-z0-9_.~+/-]+=*", re.IGNORECASE),
    re.compile(r"(\"access_token\"\s*:\s*\")[^\"]+"),
    re.compile(r"(assertion=)[A-Za-z0-9_.-]+"),
]

_lock = threading.Lock()
_active: Counter[str] = Counter()
_shapes: list[re.Pattern[str]] = list(SHAPES)
_installed = False
_previous_factory = logging.getLogRecordFactory()
# Renders tracebacks as every standard formatter does (logging.Formatter.formatException).
_TRACEBACKS = logging.Formatter()


def _variants(secret: str) -> list[str]:
    """The secret and its lines: a PEM key may be logged a line at a time."""
    found = [secret] if len(secret) >= MIN_SECRET_LENGTH else []
    if "\n" in secret:
        lines = (line.strip() for line in secret.splitlines())
        # PEM armour lines ("-----BEGIN ... KEY-----") are public text, not the secret.
        found.extend(
            line for line in lines if len(line) >= MIN_SECRET_LENGTH and "-----" not in line
        )
    return found


def scrub(text: str, secrets: Iterable[str] = ()) -> str:
    """`text` with `secrets` (and every secret registered now) masked, and every shape."""
    with _lock:
        known = set(secrets) | set(_active)
        shapes = list(_shapes)
    # Longest first, so a secret containing another is masked whole.
    for secret in sorted(known, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, MASK)
    for shape in shapes:
        text = shape.sub(rf"\g<1>{MASK}", text)
    return text


def _clean(value: object) -> object:
    if value is None or isinstance(value, int | float):
        return value
    try:
        text = value if isinstance(value, str) else str(value)
    except Exception:
        return value
    cleaned = scrub(text)
    # Other objects stay as they are unless their text held a secret.
    return cleaned if isinstance(value, str) or cleaned != text else value


def _record_factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
    record = _previous_factory(*args, **kwargs)
    if isinstance(record.msg, str):
        record.msg = scrub(record.msg)
    if isinstance(record.args, tuple):
        record.args = tuple(_clean(value) for value in record.args)
    elif isinstance(record.args, Mapping):
        record.args = {name: _clean(value) for name, value in record.args.items()}
    if record.exc_info and not record.exc_text:
        record.exc_text = scrub(_TRACEBACKS.formatException(record.exc_info))
    if record.stack_info:
        record.stack_info = scrub(record.stack_info)
    return record


def install() -> None:
    """Clean every log record of this process from now on (idempotent)."""
    global _installed, _previous_factory
    with _lock:
        if _installed:
            return
        _previous_factory = logging.getLogRecordFactory()
        logging.setLogRecordFactory(_record_factory)
        _installed = True


def mask_shape(shape: re.Pattern[str]) -> None:
    """Mask text matching `shape` (group 1 stays visible) in every record from now on."""
    install()
    with _lock:
        if shape.pattern not in {known.pattern for known in _shapes}:
            _shapes.append(shape)


class Redactor:
    """The secrets of one block; more can be added as they are made (access tokens)."""

    def __init__(self) -> None:
        self._secrets: list[str] = []

    def add(self, secret: str) -> None:
        variants = _variants(secret)
        with _lock:
            for variant in variants:
                self._secrets.append(variant)
                _active[variant] += 1

    def scrub(self, text: str) -> str:
        return scrub(text, self._secrets)

    def _release(self) -> None:
        with _lock:
            for secret in self._secrets:
                _active[secret] -= 1
                if _active[secret] <= 0:
                    del _active[secret]
            self._secrets.clear()


@contextmanager
def redacting(secrets: Iterable[str]) -> Iterator[Redactor]:
    """Mask `secrets` in every log record created until the block ends."""
    install()
    redactor = Redactor()
    for secret in secrets:
        redactor.add(secret)
    try:
        yield redactor
    finally:
        redactor._release()
