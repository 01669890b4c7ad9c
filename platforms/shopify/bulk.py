"""The life cycle of one bulk query operation: start (or adopt), poll, cancel, download.

Outcomes, and what the backfill does with them:
- completed: the result file's lines (none when the operation found nothing, which is
  believed only when `objectCount` is 0; a COMPLETED operation without a url but with
  objects is polled again, then counted as a failure).
- partial: FAILED with INTERNAL_SERVER_ERROR or TIMEOUT and a `partialDataUrl`: the lines
  of the partial file; the backfill keeps its complete prefix and retries the rest.
- capped: still running after `bulk_wait_cap_seconds`; it was cancelled (the backfill
  splits the window).
- failed: anything else worth retrying (FAILED without partial data, CANCELED by someone
  else, EXPIRED).
ACCESS_DENIED raises at once: a missing access scope does not heal by retrying.

Before API 2026-01 an app runs one bulk query per shop at a time. When Shopify answers
"already in progress" and the running operation runs exactly our query (a sync interrupted
after starting it), we adopt it; otherwise we wait for it to end, up to the wait cap.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from platforms.shopify import queries as q
from platforms.shopify.client import ShopifyClient
from platforms.shopify.errors import ShopifyAuthError, ShopifyError

log = logging.getLogger(__name__)

RUNNING = {"CREATED", "RUNNING", "CANCELING"}
RETRY_FROM_PARTIAL = {"INTERNAL_SERVER_ERROR", "TIMEOUT"}
# Polls of a COMPLETED operation that reports objects but no url yet.
URL_POLLS = 3

Kind = Literal["completed", "partial", "capped", "failed"]


@dataclass
class BulkOutcome:
    kind: Kind
    op_id: str
    lines: list[str] = field(default_factory=list)
    detail: str = ""


class BulkRunner:
    def __init__(
        self,
        client: ShopifyClient,
        *,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.settings = client.settings
        self._sleep = sleep
        self._clock = clock

    def run(self, query: str) -> BulkOutcome:
        """Run `query` as a bulk operation and wait for its outcome."""
        op_id = self._start(query)
        return self._finish(op_id, self._wait(op_id))

    def reuse(self, op_id: str) -> list[str] | None:
        """The result lines of a finished operation `op_id` when still downloadable."""
        node = self._status(op_id)
        if node and node.get("status") == "COMPLETED" and node.get("url"):
            return list(self.client.download_lines(node["url"]))
        return None

    # -- start ---------------------------------------------------------------------------

    def _start(self, query: str) -> str:
        deadline = self._clock() + self.settings.bulk_wait_cap_seconds
        while True:
            payload = self.client.query(q.BULK_RUN, {"query": query})["bulkOperationRunQuery"]
            operation = payload.get("bulkOperation")
            errors = payload.get("userErrors") or []
            if operation and not errors:
                return str(operation["id"])
            messages = "; ".join(str(e.get("message")) for e in errors) or "no operation"
            busy = any(
                e.get("code") == "OPERATION_IN_PROGRESS" or "in progress" in str(e.get("message"))
                for e in errors
            )
            if not busy:
                raise ShopifyError(
                    f"{self.client.connection.domain}: bulk query refused: {messages}"
                )
            current = self.client.query(q.CURRENT_BULK_WITH_QUERY).get("currentBulkOperation")
            if current and current.get("status") in RUNNING and current.get("query") == query:
                log.info("adopting running bulk operation %s", current["id"])
                return str(current["id"])
            if self._clock() > deadline:
                raise ShopifyError(
                    f"{self.client.connection.domain}: another bulk operation kept running "
                    f"for {self.settings.bulk_wait_cap_seconds:.0f}s"
                )
            self._sleep(self.settings.bulk_poll_seconds)

    # -- wait ----------------------------------------------------------------------------

    def _status(self, op_id: str) -> dict[str, Any] | None:
        return self.client.query(q.BULK_STATUS, {"id": op_id}).get("node")

    def _wait(self, op_id: str) -> dict[str, Any] | None:
        """The operation's final status, or None when it hit the cap and was cancelled."""
        deadline = self._clock() + self.settings.bulk_wait_cap_seconds
        while True:
            node = self._status(op_id) or {}
            if node.get("status") not in RUNNING:
                return node
            if self._clock() > deadline:
                self._cancel(op_id)
                return None
            self._sleep(self.settings.bulk_poll_seconds)

    def _cancel(self, op_id: str) -> None:
        log.info("bulk operation %s passed the wait cap: cancelling", op_id)
        self.client.query(q.BULK_CANCEL, {"id": op_id})
        # Wait (briefly) for CANCELED so the next operation is not refused as "in progress".
        for _ in range(20):
            node = self._status(op_id) or {}
            if node.get("status") not in RUNNING:
                return
            self._sleep(self.settings.bulk_poll_seconds)

    # -- outcome -------------------------------------------------------------------------

    def _finish(self, op_id: str, node: dict[str, Any] | None) -> BulkOutcome:
        if node is None:
            return BulkOutcome("capped", op_id, detail="wait cap reached")
        status = node.get("status")
        if status == "COMPLETED":
            return self._completed(op_id, node)
        code = node.get("errorCode")
        if code == "ACCESS_DENIED":
            raise ShopifyAuthError(
                f"{self.client.connection.domain}: bulk operation denied: the access token "
                "lacks a scope this dataset needs"
            )
        if status == "FAILED" and code in RETRY_FROM_PARTIAL and node.get("partialDataUrl"):
            lines = list(self.client.download_lines(node["partialDataUrl"]))
            return BulkOutcome("partial", op_id, lines, detail=str(code))
        return BulkOutcome("failed", op_id, detail=f"{status} {code or ''}".strip())

    def _completed(self, op_id: str, node: dict[str, Any]) -> BulkOutcome:
        for _ in range(URL_POLLS):
            if node.get("url"):
                return BulkOutcome(
                    "completed", op_id, list(self.client.download_lines(node["url"]))
                )
            if int(node.get("objectCount") or 0) == 0:
                return BulkOutcome("completed", op_id)
            self._sleep(self.settings.bulk_poll_seconds)
            node = self._status(op_id) or {}
        return BulkOutcome(
            "failed", op_id, detail=f"COMPLETED with {node.get('objectCount')} objects but no url"
        )
