"""When a request is tried again, and after how long: shared by Client and AsyncClient.

- 429: always, after Retry-After (the rate limit refuses a request before it does anything).
- A connection error, a timeout, or a 500, 502, 503 or 504: only for a request that is safe
  to repeat: GET, HEAD, OPTIONS, PUT, DELETE, POST /v1/query (a read), and a request with an
  Idempotency-Key (the client sends one with every export run). The wait doubles from
  `backoff` seconds up to MAX_BACKOFF, with jitter so that clients cut off together do not
  come back together; a 503's Retry-After wins.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Mapping

import httpx

from quarry_client.errors import QuarryError, RateLimited

RETRIED_STATUSES = frozenset({500, 502, 503, 504})
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})
# Paths a POST only reads from.
READ_ONLY_POSTS = frozenset({"/v1/query"})
MAX_BACKOFF = 8.0
IDEMPOTENCY_HEADER = "Idempotency-Key"


def new_idempotency_key() -> str:
    """A key for one logical run: the same across its retries, new for the next run."""
    return f"quarry-client-{uuid.uuid4()}"


def repeatable(method: str, path: str, headers: Mapping[str, str] | None) -> bool:
    if method.upper() in SAFE_METHODS:
        return True
    if method.upper() == "POST" and path in READ_ONLY_POSTS:
        return True
    return any(name.lower() == IDEMPOTENCY_HEADER.lower() for name in headers or {})


def backoff_delay(attempt: int, backoff: float) -> float:
    """The wait before retry number `attempt + 1`: doubling, capped, half of it jitter."""
    ceiling = min(MAX_BACKOFF, backoff * (2**attempt))
    return ceiling / 2 + random.uniform(0, ceiling / 2)


def delay_after_error(
    error: QuarryError, attempt: int, backoff: float, is_repeatable: bool
) -> float | None:
    """How long to wait before trying again after `error`, or None to raise it."""
    if isinstance(error, RateLimited):
        return error.retry_after
    if is_repeatable and error.status in RETRIED_STATUSES:
        return error.retry_after or backoff_delay(attempt, backoff)
    return None


def delay_after_transport_error(
    _error: httpx.TransportError, attempt: int, backoff: float, is_repeatable: bool
) -> float | None:
    """A connection refused or dropped, or a timeout: again if the request may repeat."""
    return backoff_delay(attempt, backoff) if is_repeatable else None
