"""Incremental syncs: records updated since the last run, paged, plus deletions.

A run reads `updated_at:>='since - lookback'` sorted by update time, follows every page
(and every page of each record's children), and ends with the deletions Shopify recorded
since the same moment. The lookback re-reads recent changes because Shopify's search index
lags behind writes; re-reading is harmless, rows are merged by id. The next run starts
from when this one started. A run interrupted between pages resumes from the page cursor
it reached (it stays in the sync cursor with the run's bounds).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

from platforms.shopify import queries as q
from platforms.shopify.children import complete_connections
from platforms.shopify.cursor import IncrementalCursor, iso, parse_time
from platforms.shopify.errors import ShopifyAuthError, ShopifyError
from platforms.shopify.job import SyncJob
from warehouse.pages import ChangePage

log = logging.getLogger(__name__)

EVENTS_PER_PAGE = 100


def incremental_pages(job: SyncJob, cursor: IncrementalCursor) -> Iterator[ChangePage]:
    lookback = timedelta(seconds=job.settings.lookback_seconds)
    run_from = cursor.run_from or iso(parse_time(cursor.since) - lookback)
    run_until = cursor.run_until or iso(job.now())
    after = cursor.page_after
    document = job.queries.page_query()
    search = f"updated_at:>='{run_from}'"
    buffer: dict[str, dict[str, Any]] = {}
    while True:
        connection = _page(job, document, search, after, resumed=after == cursor.page_after)
        # A record updated again while we page shows up twice: keep its latest state.
        for record in complete_connections(job.client, job.queries, connection["nodes"]):
            buffer.pop(record["id"], None)
            buffer[record["id"]] = record
        info = connection["pageInfo"]
        after = info.get("endCursor") or after
        if not info.get("hasNextPage"):
            break
        if len(buffer) >= job.settings.page_rows:
            resume = IncrementalCursor(
                since=cursor.since, run_from=run_from, run_until=run_until, page_after=after
            )
            yield job.page(list(buffer.values()), resume)
            buffer = {}
    deleted = deleted_since(job, run_from)
    records = [r for gid, r in buffer.items() if gid not in deleted]
    yield job.page(records, IncrementalCursor(since=run_until), deleted=sorted(deleted))


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
