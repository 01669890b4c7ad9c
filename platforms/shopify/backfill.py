"""Full syncs through bulk operations, one created_at window at a time.

The backfill covers [shop creation, the moment it began) in windows [lo, lo + span). The
first window is the whole range (one operation serves most shops); a window whose
operation passes the wait cap is cancelled and halved, and after a completed window the
span doubles again. Within a window parents are emitted in id order, `page_rows` per
ChangePage, and the cursor remembers the last id emitted, so a resumed backfill continues
exactly after it: a record's created_at never changes, so it belongs to one window only.

Failures: FAILED with INTERNAL_SERVER_ERROR or TIMEOUT keeps the partial file's complete
prefix (every parent but the last one, whose children may be cut off) and runs the rest of
the window again (`id:>` the last one kept). Other failures retry the window up to
`bulk_attempts` times, then split it; a failing window at `min_window_seconds` is an error.
The last page hands over to incremental syncs from the moment the backfill began.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta

from platforms.shopify import queries as q
from platforms.shopify.bulk import BulkOutcome, BulkRunner
from platforms.shopify.cursor import BackfillCursor, IncrementalCursor, iso, parse_time
from platforms.shopify.errors import ShopifyError
from platforms.shopify.job import SyncJob
from platforms.shopify.jsonl import gid_number, reassemble
from warehouse.pages import ChangePage


def start_cursor(job: SyncJob) -> BackfillCursor:
    """A backfill from the shop's creation to now, as one window."""
    shop = job.client.query(q.SHOP)["shop"]
    lo = parse_time(shop["createdAt"]).replace(microsecond=0)
    end = job.now().replace(microsecond=0)
    span = max(1, int((end - lo).total_seconds()) + 1)
    return BackfillCursor(end=iso(end), lo=iso(lo), span=span)


def window_search(lo: datetime, hi: datetime, after: int | None) -> str:
    search = f"created_at:>='{iso(lo)}' AND created_at:<'{iso(hi)}'"
    return f"{search} AND id:>{after}" if after is not None else search


class _Window:
    """The mutable position of a backfill, saved in every page's cursor."""

    def __init__(self, cursor: BackfillCursor, min_span: int) -> None:
        self.end_text = cursor.end
        self.end = parse_time(cursor.end)
        self.lo = parse_time(cursor.lo)
        self.span = cursor.span
        self.after = cursor.after
        self.op = cursor.op
        self.min_span = min_span

    @property
    def hi(self) -> datetime:
        return min(self.end, self.lo + timedelta(seconds=self.span))

    def cursor(
        self, *, after: int | None, op: str | None, lo: datetime | None = None
    ) -> BackfillCursor:
        return BackfillCursor(
            end=self.end_text, lo=iso(lo or self.lo), span=self.span, after=after, op=op
        )

    def split(self, detail: str) -> None:
        """Halve the current window, or fail when it is already as small as allowed."""
        width = int((self.hi - self.lo).total_seconds())
        if width <= self.min_span:
            raise ShopifyError(
                f"bulk export of [{iso(self.lo)}, {iso(self.hi)}) keeps failing ({detail}) "
                "and the window cannot be split further"
            )
        self.span = max(self.min_span, width // 2)


def _fetch(job: SyncJob, runner: BulkRunner, w: _Window) -> BulkOutcome:
    """The outcome for the current window: the result of the operation the cursor names
    when it is still downloadable (a resumed page run), else a new operation's."""
    if w.op:
        lines = runner.reuse(w.op)
        if lines is not None:
            return BulkOutcome("completed", w.op, lines)
    return runner.run(job.queries.bulk_query(window_search(w.lo, w.hi, w.after)))


def backfill_pages(job: SyncJob, cursor: BackfillCursor) -> Iterator[ChangePage]:
    runner = BulkRunner(job.client, sleep=job.sleep, clock=job.clock)
    rows_per_page = job.settings.page_rows
    w = _Window(cursor, job.settings.min_window_seconds)
    failures = 0
    while w.lo < w.end:
        hi = w.hi
        outcome = _fetch(job, runner, w)
        w.op = None
        records = [
            r
            for r in reassemble(outcome.lines, job.queries)
            if w.after is None or gid_number(r["id"]) > w.after
        ]
        if outcome.kind == "partial":
            records = records[:-1]  # the last parent's children may be cut off
        if outcome.kind in ("capped", "failed") or (not records and outcome.kind == "partial"):
            failures += 1
            if outcome.kind == "capped" or failures >= job.settings.bulk_attempts:
                failures = 0
                w.split(outcome.detail)
            continue
        failures = 0
        complete = outcome.kind == "completed"
        for start in range(0, len(records), rows_per_page):
            chunk = records[start : start + rows_per_page]
            last_id = gid_number(chunk[-1]["id"])
            if complete and start + rows_per_page >= len(records):
                next_cursor = w.cursor(after=None, op=None, lo=hi)
            else:
                next_cursor = w.cursor(after=last_id, op=outcome.op_id if complete else None)
            yield job.page(chunk, next_cursor)
            w.after = last_id
        if complete:
            w.lo, w.after = hi, None
            w.span *= 2
    yield job.page([], IncrementalCursor(since=w.end_text))
