"""Full syncs through bulk operations: created_at windows exported in parallel, emitted in
order, each checked for completeness before any of it is emitted.

The backfill covers [shop creation, the moment it began). A fresh backfill splits that range
into `bulk_concurrency` windows of equal time (API 2026-01+, where a shop runs up to five
bulk queries at once; one window before). The first `bulk_concurrency` pending windows each
have an operation running on Shopify; the backfill waits for the first window's, emits its
records in id order (`page_rows` per ChangePage), then starts an operation for the next
window without one. Every page's cursor lists the windows still to emit with their
operation ids and the last id emitted from the current one, so a resumed backfill adopts
operations still running, re-downloads finished ones, and never emits a record twice: a
record's created_at never changes, so it belongs to one window only.

Completeness, before a window's first page: the parents in the file must equal the
operation's `rootObjectCount`, and Shopify's exact count of the window
(`ordersCount(query:, limit: null)`, precision EXACT) must equal them. A window that fails
either is exported once more (its records may have changed while it was read); a second
mismatch raises ShopifyIncompleteError, so the cursor never passes unverified data.

Failures: FAILED with INTERNAL_SERVER_ERROR or TIMEOUT keeps the partial file's complete
prefix (every parent but the last one, whose children may be cut off) and runs the rest of
the window again (`id:>` the last one kept). Other failures retry the window up to
`bulk_attempts` times, then split it; an operation past the wait cap is cancelled and its
window split; a failing window at `min_window_seconds` is an error. The last page hands over
to incremental syncs from the moment the backfill began.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from platforms.shopify import queries as q
from platforms.shopify.bulk import BulkOutcome, BulkRunner
from platforms.shopify.cursor import (
    BackfillCursor,
    IncrementalCursor,
    Window,
    iso,
    parse_time,
)
from platforms.shopify.errors import ShopifyError, ShopifyIncompleteError
from platforms.shopify.job import SyncJob
from platforms.shopify.jsonl import gid_number, reassemble
from platforms.shopify.settings import supports_concurrent_bulk
from warehouse.pages import ChangePage

log = logging.getLogger(__name__)


def start_cursor(job: SyncJob) -> BackfillCursor:
    """A backfill from the shop's creation to now, in `parallelism(job)` windows."""
    shop = job.client.query(q.SHOP)["shop"]
    lo = parse_time(shop["createdAt"]).replace(microsecond=0)
    end = job.now().replace(microsecond=0)
    return BackfillCursor(end=iso(end), windows=tuple(split_range(lo, end, job)))


def parallelism(job: SyncJob) -> int:
    if not supports_concurrent_bulk(job.client.connection.api_version):
        return 1
    return job.settings.bulk_concurrency


def split_range(lo: datetime, end: datetime, job: SyncJob) -> list[Window]:
    """[lo, end) in up to parallelism(job) windows of equal time, none shorter than
    min_window_seconds (one window for a young shop)."""
    total = max(1, int((end - lo).total_seconds()) + 1)
    parts = max(1, min(parallelism(job), total // job.settings.min_window_seconds))
    bounds = [lo + timedelta(seconds=total * i // parts) for i in range(parts)] + [end]
    # hi of the last window is exclusive at `end`; created_at == end belongs to incremental.
    return [Window(iso(a), iso(b)) for a, b in itertools.pairwise(bounds) if a < b]


def window_search(lo: datetime, hi: datetime, after: int | None) -> str:
    search = f"created_at:>='{iso(lo)}' AND created_at:<'{iso(hi)}'"
    return f"{search} AND id:>{after}" if after is not None else search


def _search(w: Window) -> str:
    return window_search(parse_time(w.lo), parse_time(w.hi), w.after)


def _halves(w: Window, min_span: int, detail: str) -> list[Window]:
    """`w` split in two at its middle, or ShopifyError when it is already at min_span."""
    lo, hi = parse_time(w.lo), parse_time(w.hi)
    width = int((hi - lo).total_seconds())
    if width <= min_span:
        raise ShopifyError(
            f"bulk export of [{w.lo}, {w.hi}) keeps failing ({detail}) and the window cannot "
            "be split further"
        )
    mid = lo + timedelta(seconds=max(min_span, width // 2))
    return [Window(w.lo, iso(mid), w.after), Window(iso(mid), w.hi)]


class _Backfill:
    """The windows still to emit and the operations exporting them."""

    def __init__(self, job: SyncJob, cursor: BackfillCursor) -> None:
        self.job = job
        self.end = cursor.end
        self.windows = list(cursor.windows)
        self.runner = BulkRunner(job.client, sleep=job.sleep, clock=job.clock)
        self.parallel = parallelism(job)
        self.failures = 0  # failed attempts at the head window
        self.rereads = 0  # completeness re-reads of the head window
        # Operations this process started: their outcome is awaited as it comes (failures
        # count); those named by a resumed cursor are resumed when still usable.
        self.started: set[str] = set()

    def cursor(self) -> BackfillCursor:
        return BackfillCursor(end=self.end, windows=tuple(self.windows))

    def launch(self) -> None:
        """Start an operation for each of the first `parallel` windows without one (the
        head waits for a free slot; the others start only when one is free now)."""
        for i, w in enumerate(self.windows[: self.parallel]):
            if w.op:
                continue
            query = self.job.queries.bulk_query(_search(w))
            op = self.runner.start(query) if i == 0 else self.runner.try_start(query)
            if op is None:
                return
            self.started.add(op)
            self.windows[i] = replace(w, op=op)

    def head_outcome(self) -> BulkOutcome:
        head = self.windows[0]
        assert head.op is not None
        if head.op in self.started:
            return self.runner.wait(head.op)
        outcome = self.runner.resume(head.op)
        if outcome is None:
            # Failed, expired or unknown: export the window (from `after`) again.
            self.windows[0] = replace(head, op=None)
            self.launch()
            outcome = self.runner.wait(str(self.windows[0].op))
        return outcome

    def retry_head(self, outcome: BulkOutcome) -> None:
        """After a failed attempt: try again, or split the window."""
        head = self.windows[0]
        self.failures += 1
        if outcome.kind == "capped" or self.failures >= self.job.settings.bulk_attempts:
            self.failures = 0
            self.windows[0:1] = _halves(head, self.job.settings.min_window_seconds, outcome.detail)
        else:
            self.windows[0] = replace(head, op=None)

    def verify(self, outcome: BulkOutcome, parents: list[dict[str, Any]]) -> str | None:
        """Why the head window's export looks incomplete, or None when it checks out."""
        head = self.windows[0]
        in_file = len(parents)
        if outcome.root_count is not None and outcome.root_count != in_file:
            return (
                f"bulk operation {outcome.op_id} reported {outcome.root_count} "
                f"{self.job.queries.root} (rootObjectCount) but its file held {in_file}"
            )
        counted, exact = count_matching(self.job, _search(head))
        read = len([p for p in parents if head.after is None or gid_number(p["id"]) > head.after])
        if (exact and counted != read) or (not exact and read < counted):
            return (
                f"Shopify counts {counted} {self.job.queries.root} created in "
                f"[{head.lo}, {head.hi}){f' after id {head.after}' if head.after else ''} "
                f"but {read} were exported"
            )
        return None


def count_matching(job: SyncJob, search: str) -> tuple[int, bool]:
    """Shopify's count of the dataset's records matching `search`, and whether it is exact
    (`precision` EXACT; limit: null lifts the 10,000 cap)."""
    data = job.client.query(job.queries.count_query(), {"query": search})
    count = data[job.queries.count_field]
    return int(count["count"]), count.get("precision", "EXACT") == "EXACT"


def backfill_pages(job: SyncJob, cursor: BackfillCursor) -> Iterator[ChangePage]:
    state = _Backfill(job, cursor)
    rows_per_page = job.settings.page_rows
    while state.windows:
        state.launch()
        outcome = state.head_outcome()
        head = state.windows[0]
        if outcome.kind in ("capped", "failed"):
            state.retry_head(outcome)
            continue
        parents = reassemble(outcome.lines, job.queries)
        if outcome.kind == "completed":
            problem = state.verify(outcome, parents)
            if problem:
                if state.rereads >= 1:
                    raise ShopifyIncompleteError(
                        f"{job.client.connection.domain}: {job.queries.dataset}: {problem}, "
                        "again after reading the window a second time; the sync stops before "
                        "this window so no unverified data is committed"
                    )
                log.warning("%s; reading the window again", problem)
                state.rereads += 1
                state.windows[0] = replace(head, op=None)
                continue
        records = [p for p in parents if head.after is None or gid_number(p["id"]) > head.after]
        if outcome.kind == "partial":
            records = records[:-1]  # the last parent's children may be cut off
            if not records:
                state.retry_head(outcome)
                continue
        state.failures = state.rereads = 0
        complete = outcome.kind == "completed"
        for start in range(0, len(records), rows_per_page):
            chunk = records[start : start + rows_per_page]
            last_id = gid_number(chunk[-1]["id"])
            if complete and start + rows_per_page >= len(records):
                state.windows.pop(0)
            else:
                # Resuming re-downloads a completed file; a partial one's rest runs again.
                state.windows[0] = replace(
                    head, after=last_id, op=outcome.op_id if complete else None
                )
            yield job.page(chunk, state.cursor())
        if complete and not records:
            state.windows.pop(0)
    yield job.page([], IncrementalCursor(since=state.end))
