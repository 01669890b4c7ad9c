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

From API 2026-01 an app runs up to five bulk queries per shop at once, and an operation is
read with `bulkOperation(id:)`; before, one at a time, read with `node(id:)`. When Shopify
refuses a new operation because the limit is reached and one of the running operations
runs exactly our query (a sync interrupted after starting it), we adopt it, found through
`bulkOperations(query: "status:running")` (`currentBulkOperation` before 2026-01: it
returns one operation and is deprecated); otherwise we wait for a slot, up to the wait cap.

Every outcome carries `rootObjectCount`: the backfill compares it with the parents in the
file (platforms.shopify.backfill).
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
from platforms.shopify.settings import supports_concurrent_bulk

log = logging.getLogger(__name__)

RUNNING = {"CREATED", "RUNNING", "CANCELING"}
RETRY_FROM_PARTIAL = {"INTERNAL_SERVER_ERROR", "TIMEOUT"}
# bulkOperationRunQuery refusals that mean "every slot is taken, try later"
# (BulkOperationUserErrorCode: OPERATION_IN_PROGRESS "A bulk operation is already in
# progress", LIMIT_REACHED "Bulk operations limit reached. Please try again later."), and
# the words of such a message when no code is given.
BUSY_CODES = {"OPERATION_IN_PROGRESS", "LIMIT_REACHED"}
BUSY_WORDS = ("in progress", "concurrent", "limit reached")
# Polls of a COMPLETED operation that reports objects but no url yet.
URL_POLLS = 3

Kind = Literal["completed", "partial", "capped", "failed"]


@dataclass
class BulkOutcome:
    kind: Kind
    op_id: str
    lines: list[str] = field(default_factory=list)
    detail: str = ""
    # Shopify's count of top-level objects the operation exported (None when unknown).
    root_count: int | None = None


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
        self.concurrent = supports_concurrent_bulk(client.connection.api_version)

    def run(self, query: str) -> BulkOutcome:
        """Run `query` as a bulk operation and wait for its outcome."""
        op_id = self.start(query)
        return self.wait(op_id)

    def wait(self, op_id: str) -> BulkOutcome:
        """The outcome of operation `op_id`, waiting (up to the cap) while it runs."""
        return self._finish(op_id, self._wait(op_id))

    def resume(self, op_id: str) -> BulkOutcome | None:
        """The outcome of an operation a previous sync started, when it can still give one:
        still running (waited for) or completed with its file downloadable. None when it
        failed, expired or is unknown: the caller runs its query again."""
        node = self._status(op_id)
        if not node:
            return None
        if node.get("status") in RUNNING:
            return self.wait(op_id)
        if node.get("status") == "COMPLETED" and (
            node.get("url") or int(node.get("rootObjectCount") or 0) == 0
        ):
            return self._finish(op_id, node)
        return None

    # -- start ---------------------------------------------------------------------------

    def try_start(self, query: str) -> str | None:
        """Start `query` now, or None when the shop's bulk slots are all taken."""
        return self._start(query, wait=False)

    def start(self, query: str) -> str:
        """Start `query`, waiting (up to the cap) for a free slot."""
        op_id = self._start(query, wait=True)
        assert op_id is not None
        return op_id

    def _start(self, query: str, *, wait: bool) -> str | None:
        deadline = self._clock() + self.settings.bulk_wait_cap_seconds
        while True:
            payload = self.client.query(q.BULK_RUN, {"query": query})["bulkOperationRunQuery"]
            operation = payload.get("bulkOperation")
            errors = payload.get("userErrors") or []
            if operation and not errors:
                return str(operation["id"])
            messages = "; ".join(str(e.get("message")) for e in errors) or "no operation"
            busy = any(
                e.get("code") in BUSY_CODES
                or any(w in str(e.get("message")).lower() for w in BUSY_WORDS)
                for e in errors
            )
            if not busy:
                raise ShopifyError(
                    f"{self.client.connection.domain}: bulk query refused: {messages}"
                )
            adopted = self._running_with(query)
            if adopted:
                log.info("adopting running bulk operation %s", adopted)
                return adopted
            if not wait:
                return None
            if self._clock() > deadline:
                raise ShopifyError(
                    f"{self.client.connection.domain}: another bulk operation kept running "
                    f"for {self.settings.bulk_wait_cap_seconds:.0f}s"
                )
            self._sleep(self.settings.bulk_poll_seconds)

    def _running_with(self, query: str) -> str | None:
        """The id of one of our running operations whose query is exactly `query`."""
        if self.concurrent:
            data = self.client.query(
                q.RUNNING_BULK_OPERATIONS,
                {"first": 10, "query": "status:running operation_type:query"},
            )
            running = (data.get("bulkOperations") or {}).get("nodes") or []
        else:
            current = self.client.query(q.CURRENT_BULK_WITH_QUERY).get("currentBulkOperation")
            running = [current] if current else []
        for operation in running:
            if operation.get("status") in RUNNING and operation.get("query") == query:
                return str(operation["id"])
        return None

    # -- wait ----------------------------------------------------------------------------

    def _status(self, op_id: str) -> dict[str, Any] | None:
        if self.concurrent:
            return self.client.query(q.BULK_OPERATION, {"id": op_id}).get("bulkOperation")
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
            roots = node.get("rootObjectCount")
            root_count = int(roots) if roots is not None else None
            if node.get("url"):
                lines = list(self.client.download_lines(node["url"]))
                return BulkOutcome("completed", op_id, lines, root_count=root_count)
            if int(node.get("objectCount") or 0) == 0:
                return BulkOutcome("completed", op_id, root_count=root_count)
            self._sleep(self.settings.bulk_poll_seconds)
            node = self._status(op_id) or {}
        return BulkOutcome(
            "failed", op_id, detail=f"COMPLETED with {node.get('objectCount')} objects but no url"
        )
