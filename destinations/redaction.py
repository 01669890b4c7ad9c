"""Keeps credentials out of logs while a delivery runs.

Libraries we call log at DEBUG what they send: botocore logs signed request headers (with a
session token), httpx logs upload session addresses. We cannot change what they log, so every
log record created while a delivery holds secrets has them replaced by `***` before any
handler sees it (a LogRecord factory, because a filter on a logger misses records of its
children and a filter on handlers misses handlers added later, such as pytest's caplog).
"""

from __future__ import annotations

import logging
import re
import threading
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

MASK = "***"
# Shorter strings (a port, "yes") would mask innocent text and protect nothing.
MIN_SECRET_LENGTH = 6

_lock = threading.Lock()
_active: Counter[str] = Counter()
_installed = False
_previous_factory = logging.getLogRecordFactory()


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


# Secrets a library may log before we have seen them, so they cannot be registered in
# time: httpcore logs response headers (a resumable upload's Location carries its
# upload_id) as soon as they arrive. Masked by shape while any delivery runs.
_PATTERNS = [
    re.compile(r"(upload_id=)[A-Za-z0-9_.~%-]+"),
    re.compile(r"(Bearer\s+)[A-Za-z0-9_.~+/-]+=*", re.IGNORECASE),
    re.compile(r"(\"access_token\"\s*:\s*\")[^\"]+"),
    re.compile(r"(assertion=)[A-Za-z0-9_.-]+"),
]


def scrub(text: str, secrets: Iterable[str]) -> str:
    # Longest first, so a secret containing another is masked whole.
    for secret in sorted(set(secrets), key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, MASK)
    for pattern in _PATTERNS:
        text = pattern.sub(rf"\g<1>{MASK}", text)
    return text


def _record_factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
    record = _previous_factory(*args, **kwargs)
    if not _active:
        return record
    with _lock:
        secrets = list(_active)
    try:
        message = record.getMessage()
    except Exception:
        return record
    cleaned = scrub(message, secrets)
    if cleaned != message:
        record.msg = cleaned
        record.args = None
    return record


def _install() -> None:
    global _installed, _previous_factory
    with _lock:
        if _installed:
            return
        _previous_factory = logging.getLogRecordFactory()
        logging.setLogRecordFactory(_record_factory)
        _installed = True


class Redactor:
    """The secrets of one delivery; more can be added as they are made (access tokens)."""

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
    _install()
    redactor = Redactor()
    for secret in secrets:
        redactor.add(secret)
    try:
        yield redactor
    finally:
        redactor._release()
