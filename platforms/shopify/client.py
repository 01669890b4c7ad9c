"""HTTP to the Admin GraphQL API: one POST per query, rate-limit aware, retried.

- Before sending, wait for the cost bucket (platforms.shopify.throttle) to hold the query's
  requested cost within our share.
- THROTTLED GraphQL errors wait for the bucket to refill; 429 waits `Retry-After`; 5xx,
  INTERNAL_SERVER_ERROR and transport errors back off exponentially with jitter. All of
  these are retried (tenacity) up to `max_attempts`.
- 401/403 and other GraphQL errors are not retried: they will not fix themselves.

The access token (platforms.shopify.auth: static, or renewed before it expires) goes in the
X-Shopify-Access-Token header of API calls only; a 401 renews a client-credentials token
once and sends the query again. Bulk result files are downloaded from their signed URLs by
a separate client that never sends the token.
"""

from __future__ import annotations

import logging
import random
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
from tenacity import RetryCallState, Retrying, retry_if_exception_type, stop_after_attempt

from platforms.shopify.auth import AccessTokens, admin_base
from platforms.shopify.errors import ShopifyAuthError, ShopifyError
from platforms.shopify.settings import ShopConnection, ShopifySettings
from platforms.shopify.throttle import CostBucket

log = logging.getLogger(__name__)

_OPERATION = re.compile(r"^\s*(?:query|mutation)\s+(\w+)")


@dataclass
class _Retry(Exception):
    """A failure worth another attempt; `delay` is the server's or the bucket's wait."""

    reason: str
    delay: float | None = None

    def __str__(self) -> str:
        return self.reason


def operation_name(document: str) -> str:
    match = _OPERATION.match(document)
    return match.group(1) if match else "anonymous"


def _retry_after(response: httpx.Response) -> float:
    try:
        return max(0.0, float(response.headers.get("Retry-After", "2")))
    except ValueError:
        return 2.0


class ShopifyClient:
    """A GraphQL client for one store. Use as a context manager, or call close()."""

    def __init__(
        self,
        connection: ShopConnection,
        settings: ShopifySettings,
        *,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        bucket: CostBucket | None = None,
        tokens: AccessTokens | None = None,
    ) -> None:
        self.connection = connection
        self.settings = settings
        # The shop's bucket is one per app and store: clients of one connector share its
        # model, so a new client does not start blind and spend past the sync's share.
        self.bucket = bucket or CostBucket(share=settings.bucket_share, clock=clock)
        self._sleep = sleep
        self.tokens = tokens or AccessTokens(connection, settings, clock=clock)
        base = admin_base(settings, connection.domain)
        self.endpoint = f"{base}/admin/api/{connection.api_version}/graphql.json"
        timeout = httpx.Timeout(settings.request_timeout_seconds)
        self._http = httpx.Client(
            timeout=timeout,
            headers={"Content-Type": "application/json", "Accept": "application/json"},
        )
        # Signed result URLs need no credentials: never send the token to their host.
        self._downloads = httpx.Client(timeout=timeout, follow_redirects=True)

    def __enter__(self) -> ShopifyClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()
        self._downloads.close()

    # -- queries -------------------------------------------------------------------------

    def query(self, document: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
        """The `data` of `document` run with `variables`; raises ShopifyError on errors."""
        operation = operation_name(document)
        payload = {"query": document, "variables": variables or {}}
        retrying = Retrying(
            retry=retry_if_exception_type(_Retry),
            stop=stop_after_attempt(self.settings.max_attempts),
            wait=self._wait,
            sleep=self._sleep,
            reraise=True,
        )
        try:
            for attempt in retrying:
                with attempt:
                    return self._post(operation, payload)
        except _Retry as exc:
            raise ShopifyError(
                f"{self.connection.domain}: {operation} still failing after "
                f"{self.settings.max_attempts} attempts: {exc.reason}"
            ) from None
        raise AssertionError("unreachable")  # pragma: no cover - Retrying always returns

    def _wait(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, _Retry) and exc.delay is not None:
            return exc.delay
        base = self.settings.backoff_seconds * 2 ** (state.attempt_number - 1)
        return min(self.settings.backoff_max_seconds, base) * (0.5 + random.random() / 2)

    def _post(self, operation: str, payload: dict[str, Any]) -> dict[str, Any]:
        wait = self.bucket.wait_before(operation)
        if wait > 0:
            log.debug("%s: waiting %.2fs for the cost bucket", operation, wait)
            self._sleep(wait)
        response = self._send(payload)
        self._check_status(operation, response)
        try:
            body = response.json()
        except ValueError as exc:
            raise _Retry(f"response is not JSON (HTTP {response.status_code})") from exc
        cost = (body.get("extensions") or {}).get("cost")
        self.bucket.observe(operation, cost)
        errors = body.get("errors")
        if errors:
            self._raise_for_errors(operation, errors, cost)
        return body.get("data") or {}

    def _send(self, payload: dict[str, Any]) -> httpx.Response:
        """POST `payload` with the current token; once more with a new one on a 401."""
        token = self.tokens.current()
        response = self._post_with(token, payload)
        if response.status_code == 401 and self.tokens.renew(token):
            log.info("%s: token refused (HTTP 401): renewed it, sending again", self.endpoint)
            response = self._post_with(self.tokens.current(), payload)
        return response

    def _post_with(self, token: str, payload: dict[str, Any]) -> httpx.Response:
        try:
            return self._http.post(
                self.endpoint, json=payload, headers={"X-Shopify-Access-Token": token}
            )
        except httpx.TransportError as exc:
            raise _Retry(f"{type(exc).__name__}: {exc}") from exc

    def _check_status(self, operation: str, response: httpx.Response) -> None:
        status = response.status_code
        domain = self.connection.domain
        if status == 429:
            raise _Retry("HTTP 429 Too Many Requests", delay=_retry_after(response))
        if status >= 500:
            raise _Retry(f"HTTP {status}")
        if status == 401:
            raise ShopifyAuthError(f"{domain}: Shopify refused the access token (HTTP 401)")
        if status == 403:
            raise ShopifyAuthError(
                f"{domain}: the access token lacks a required access scope (HTTP 403)"
            )
        if status == 404:
            raise ShopifyError(
                f"{domain}: no Admin API at {self.endpoint} (HTTP 404): check the domain "
                f"and API version {self.connection.api_version}"
            )
        if status == 402:
            raise ShopifyError(f"{domain}: the shop is frozen for non-payment (HTTP 402)")
        if status == 423:
            raise ShopifyError(f"{domain}: the shop is locked (HTTP 423)")
        if status >= 400:
            raise ShopifyError(f"{domain}: {operation} was refused (HTTP {status})")

    def _raise_for_errors(
        self, operation: str, errors: list[dict[str, Any]], cost: dict[str, Any] | None
    ) -> None:
        codes = {str((e.get("extensions") or {}).get("code", "")) for e in errors}
        messages = "; ".join(str(e.get("message", "")) for e in errors)
        if "THROTTLED" in codes or messages.strip().lower() == "throttled":
            requested = float((cost or {}).get("requestedQueryCost") or 0)
            raise _Retry("THROTTLED", delay=self.bucket.wait_after_throttled(requested))
        if "INTERNAL_SERVER_ERROR" in codes:
            raise _Retry(f"INTERNAL_SERVER_ERROR: {messages}")
        if "ACCESS_DENIED" in codes:
            raise ShopifyAuthError(f"{self.connection.domain}: {operation}: {messages}")
        raise ShopifyError(f"{self.connection.domain}: {operation}: {messages}")

    # -- result files --------------------------------------------------------------------

    def download_lines(self, url: str) -> Iterator[str]:
        """The non-empty lines of the JSONL file at `url` (a bulk operation's result).

        Streamed line by line; a failed download is retried as a whole by the caller's
        bulk logic, since a half-read file cannot be resumed reliably.
        """
        try:
            with self._downloads.stream("GET", url) as response:
                if response.status_code >= 400:
                    raise ShopifyError(
                        f"{self.connection.domain}: bulk result download failed "
                        f"(HTTP {response.status_code})"
                    )
                for line in response.iter_lines():
                    if line.strip():
                        yield line
        except httpx.TransportError as exc:
            raise ShopifyError(
                f"{self.connection.domain}: bulk result download failed: {exc}"
            ) from exc
