"""Incremental syncs: records updated since the last run, paged, plus deletions.

A run reads `updated_at:>='since - lookback'` sorted by update time, follows every page
(and every page of each record's children), and ends with the deletions Shopify recorded
since the same moment. The lookback re-reads recent changes because Shopify's search index
lags behind writes; re-reading is harmless, rows are merged by id. The next run starts
from when this one started. A run interrupted between pages resumes from the page cursor
it reached (it stays in the sync cursor with the run's bounds).

Completeness: before the last page (the one that moves `since` forward), Shopify's exact
count of records updated in [run_from, run_until) is compared with the records of that
window the run read; a mismatch reads the window once more, a second one raises
ShopifyIncompleteError (docs/shopify.md, "Completeness").

Orders also take the orders named by Order events of refunds and fulfillments since
run_from: those children change without the order's updatedAt (docs/shopify.md, "Changes
that do not touch the order"), so the updated_at search alone would miss them.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

from platforms.shopify import queries as q
from platforms.shopify.backfill import count_matching
from platforms.shopify.children import complete_connections
from platforms.shopify.cursor import IncrementalCursor, iso, parse_time
from platforms.shopify.errors import ShopifyAuthError, ShopifyError, ShopifyIncompleteError
from platforms.shopify.job import SyncJob
from warehouse.pages import ChangePage

log = logging.getLogger(__name__)

EVENTS_PER_PAGE = 100


def incremental_pages(job: SyncJob, cursor: IncrementalCursor) -> Iterator[ChangePage]:
    lookback = timedelta(seconds=job.settings.lookback_seconds)
    run_from = cursor.run_from or iso(parse_time(cursor.since) - lookback)
    run_until = cursor.run_until or iso(job.now())
    rereads = 0
    resume_after, emitted_before = cursor.page_after, cursor.emitted
    while True:
        run = _Run(job, cursor.since, run_from, run_until, resume_after, emitted_before)
        yield from run.pages()
        problem = run.verify()
        if problem is None:
            break
        if rereads >= 1:
            raise ShopifyIncompleteError(
                f"{job.client.connection.domain}: {job.queries.dataset}: {problem}, again "
                "after reading the window a second time; the cursor stays before this window"
            )
        log.warning("%s; reading the window again", problem)
        rereads += 1
        resume_after, emitted_before = None, 0
    changed = child_changes(job, run_from, exclude=set(run.buffer))
    deleted = deleted_since(job, run_from)
    records = [r for gid, r in {**run.buffer, **changed}.items() if gid not in deleted]
    yield job.page(records, IncrementalCursor(since=run_until), deleted=sorted(deleted))


class _Run:
    """One read of the window [run_from, run_until) and everything updated after it:
    every page but the last handed over as it fills, the last kept in `buffer` until the
    window is verified."""

    def __init__(
        self,
        job: SyncJob,
        since: str,
        run_from: str,
        run_until: str,
        page_after: str | None,
        emitted: int,
    ) -> None:
        self.job = job
        self.since = since
        self.run_from = run_from
        self.run_until = run_until
        self.page_after = page_after
        # Records of the window emitted by earlier pages of this run (a resumed run).
        self.emitted = emitted
        self.buffer: dict[str, dict[str, Any]] = {}

    def _in_window(self, record: dict[str, Any]) -> bool:
        updated = record.get("updatedAt")
        return isinstance(updated, str) and parse_time(updated) < parse_time(self.run_until)

    def pages(self) -> Iterator[ChangePage]:
        job = self.job
        document = job.queries.page_query()
        search = f"updated_at:>='{self.run_from}'"
        after = self.page_after
        while True:
            connection = _page(job, document, search, after, resumed=after == self.page_after)
            # A record updated again while we page shows up twice: keep its latest state.
            for record in complete_connections(job.client, job.queries, connection["nodes"]):
                self.buffer.pop(record["id"], None)
                self.buffer[record["id"]] = record
            info = connection["pageInfo"]
            after = info.get("endCursor") or after
            if not info.get("hasNextPage"):
                return
            if len(self.buffer) >= job.settings.page_rows:
                self.emitted += sum(1 for r in self.buffer.values() if self._in_window(r))
                resume = IncrementalCursor(
                    since=self.since,
                    run_from=self.run_from,
                    run_until=self.run_until,
                    page_after=after,
                    emitted=self.emitted,
                )
                yield job.page(list(self.buffer.values()), resume)
                self.buffer = {}

    def verify(self) -> str | None:
        """Why the run looks incomplete against Shopify's count of records updated in
        [run_from, run_until), or None. Records updated again after run_until left that
        window, in the count and here alike."""
        search = f"updated_at:>='{self.run_from}' AND updated_at:<'{self.run_until}'"
        counted, exact = count_matching(self.job, search)
        read = self.emitted + sum(1 for r in self.buffer.values() if self._in_window(r))
        if (exact and counted != read) or (not exact and read < counted):
            return (
                f"Shopify counts {counted} {self.job.queries.root} updated in "
                f"[{self.run_from}, {self.run_until}) but {read} were read"
            )
        return None


def child_changes(job: SyncJob, since: str, exclude: set[str]) -> dict[str, dict[str, Any]]:
    """Orders whose refunds or fulfillments changed since `since` without a newer
    updatedAt (found through their Order events), read again by id; `exclude` were read
    already. Other datasets have no such children."""
    if job.queries.dataset != "orders":
        return {}
    ids = sorted(
        {
            str(e["subjectId"])
            for e in _events(job, f"subject_type:ORDER AND created_at:>='{since}'")
            if e.get("action") in q.CHILD_CHANGE_ACTIONS and e.get("subjectId")
        }
        - exclude
    )
    records: dict[str, dict[str, Any]] = {}
    document = job.queries.nodes_query()
    for start in range(0, len(ids), job.queries.page):
        data = job.client.query(document, {"ids": ids[start : start + job.queries.page]})
        found = [n for n in data.get("nodes") or [] if n]  # deleted since: no node
        for record in complete_connections(job.client, job.queries, found):
            records[record["id"]] = record
    return records


def _events(job: SyncJob, search: str) -> Iterator[dict[str, Any]]:
    after: str | None = None
    while True:
        data = job.client.query(
            q.EVENTS, {"first": EVENTS_PER_PAGE, "after": after, "query": search}
        )
        events = data["events"]
        yield from events["nodes"]
        if not events["pageInfo"].get("hasNextPage"):
            return
        after = events["pageInfo"]["endCursor"]


def _page(
    job: SyncJob, document: str, search: str, after: str | None, *, resumed: bool
) -> dict[str, Any]:
    """One page of the run. A page cursor saved by an interrupted run may have expired:
    then the run starts over from its lower bound (re-reading is harmless)."""
    variables = {"first": job.queries.page, "after": after, "query": search}
    try:
        return job.client.query(document, variables)[job.queries.root]
    except ShopifyAuthError:
        raise
    except ShopifyError as exc:
        if not (resumed and after):
            raise
        log.warning("saved page cursor refused (%s): restarting the run", exc)
        variables["after"] = None
        return job.client.query(document, variables)[job.queries.root]


def deleted_since(job: SyncJob, since: str) -> set[str]:
    """Gids of the dataset's records whose `destroy` event happened at or after `since`."""
    search = (
        f"action:destroy AND subject_type:{job.queries.event_subject} AND created_at:>='{since}'"
    )
    deleted: set[str] = set()
    after: str | None = None
    while True:
        data = job.client.query(
            q.DELETIONS, {"first": EVENTS_PER_PAGE, "after": after, "query": search}
        )
        events = data["events"]
        for event in events["nodes"]:
            # Checked again here: a filter Shopify did not apply must not delete records.
            subject = event.get("subjectType", job.queries.event_subject)
            if (
                event.get("action") == "destroy"
                and subject == job.queries.event_subject
                and event.get("subjectId")
            ):
                deleted.add(str(event["subjectId"]))
        if not events["pageInfo"].get("hasNextPage"):
            return deleted
        after = events["pageInfo"]["endCursor"]
