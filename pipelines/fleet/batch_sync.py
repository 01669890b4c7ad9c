"""Sync the stores of a fleet batch together: what a store's sync does (pipelines.fleet.
store_sync), with each statement and each commit made once for the whole batch.

A small store's sync costs what its statements and commits cost, not what its rows cost
(about 3 s for 200 orders, profiled): so each dataset of every store of the batch is read
from its platform (on threads), then written in one transaction with one statement per
table (warehouse.writer.apply_changes); the sales of all their changed orders are rebuilt
in one transaction (warehouse.modelled.sales.write_sales); each table's checks are one
query for the batch (pipelines.fleet.store_sync.check_stores).

A store's failure stays its own:
- a platform that fails (or reports an incomplete sync) fails that store before anything
  of it is written; the others go on;
- a store whose change of a dataset is larger than one page batch (`batch_rows`) leaves
  the batch and is synced alone afterwards, page by page, as a store of its own;
- if a batch statement fails (a store's rows that the lake refuses), what the batch
  committed so far stays unpublished with its cursors, and every store not yet published
  is synced again alone (sync_store), which isolates the one that fails.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from itertools import islice

from sqlalchemy import select
from sqlalchemy.orm import Session

from pipelines.fleet.store_sync import StepReport, StoreSync, check_stores, sync_store
from pipelines.sync.dataset import DatasetSync
from pipelines.sync.sales import SalesBuild
from pipelines.sync.snapshot import publish_snapshots
from pipelines.sync.table_stats import CheckOutcome
from platforms.base import Connector, IncompleteSync
from quarry.measures import TALLY
from registry.accounts import get_store
from registry.cursors import (
    clear_sales_pending,
    mark_sales_pending,
    pending_sales,
    set_cursor,
)
from registry.db import Registry
from registry.measures import stores_labels
from registry.models import SyncCursor
from warehouse.lake import Lake
from warehouse.modelled.sales import SalesWork, write_sales
from warehouse.pages import ChangePage, batched
from warehouse.schemas import SOURCE_DATASETS
from warehouse.snapshots import latest_snapshots
from warehouse.writer import StoreChange, apply_changes

log = logging.getLogger(__name__)

# Platforms read at once: their pages arrive while others are parsed.
READ_THREADS = 8


@dataclass(frozen=True)
class _Read:
    """A store's whole change of a dataset (None: nothing new), the cursor after it, or
    `too_large` for a batch."""

    change: StoreChange | None
    cursor: str | None
    too_large: bool = False


def sync_stores_together(
    lake: Lake,
    registry: Registry,
    stores: Sequence[tuple[Connector, tuple[str, ...]]],
    *,
    batch_rows: int = 50_000,
    max_stores: int = 0,
    report: Callable[[str], StepReport],
) -> list[StoreSync]:
    """Sync each (connector, datasets) of `stores`; never raises for a store's own failure.
    `report(store_id)` hears that store's steps. Returns one result per store, in order."""
    if len(stores) == 1:
        # A batch of one (a large first sync is one) gains nothing from batching, and its
        # first pages would be read twice if they prove too many for one commit.
        [(connector, datasets)] = stores
        return [
            sync_store(
                lake,
                registry,
                connector,
                datasets=datasets,
                batch_rows=batch_rows,
                max_stores=max_stores,
                report=report(connector.store_id),
            )
        ]
    results = {c.store_id: StoreSync(c.store_id) for c, _ in stores}
    connectors = {c.store_id: c for c, _ in stores}
    wanted = {c.store_id: datasets for c, datasets in stores}
    started = time.monotonic()
    alone: list[str] = []
    live = list(results)
    published: dict[str, int] = {}
    try:
        with registry.session() as session:
            published = latest_snapshots(session, live)
            cursors = _cursors(session, live)
        for dataset in SOURCE_DATASETS:
            todo = [s for s in live if dataset in wanted[s]]
            if not todo:
                continue
            step = time.monotonic()
            read = _read_all([connectors[s] for s in todo], dataset, cursors, batch_rows)
            changes: dict[str, _Read] = {}
            for store_id, outcome in read.items():
                if isinstance(outcome, BaseException):
                    _fail(results[store_id], dataset, outcome)
                    report(store_id)(f"sync_{dataset}", False, time.monotonic() - step, {})
                    live.remove(store_id)
                elif outcome.too_large:
                    alone.append(store_id)
                    live.remove(store_id)
                else:
                    changes[store_id] = outcome
            _write(lake, registry, dataset, changes, results)
            seconds = (time.monotonic() - step) / max(1, len(changes))
            for store_id in changes:
                rows = results[store_id].datasets[dataset].rows
                report(store_id)(f"sync_{dataset}", True, seconds, rows)
        sales = _sales(lake, registry, live, published)
        for store_id, built in sales.items():
            results[store_id].sales = built
            report(store_id)("sales", True, 0.0, {"sales": built.rows})
        check_stores(lake, connectors, [results[s] for s in live], published)
        passing = [s for s in live if results[s].error is None]
        for store_id, taken in publish_snapshots(lake, registry, passing, published).items():
            results[store_id].snapshot = taken
    except Exception:  # a statement of the batch failed: each store again, alone
        log.exception("a fleet batch failed; syncing its stores one by one")
        alone += [s for s in live if results[s].snapshot is None]
    _measure(registry, results.values(), max_stores, time.monotonic() - started)
    for store_id in dict.fromkeys(alone):
        results[store_id] = sync_store(
            lake,
            registry,
            connectors[store_id],
            datasets=wanted[store_id],
            batch_rows=batch_rows,
            max_stores=max_stores,
            report=report(store_id),
        )
    elapsed = time.monotonic() - started
    for result in results.values():
        if result.seconds == 0.0:
            result.seconds = elapsed
    return [results[c.store_id] for c, _ in stores]


def _cursors(session: Session, store_ids: list[str]) -> dict[str, dict[str, str | None]]:
    """Every saved cursor of the stores, by store and dataset, in one query."""
    found: dict[str, dict[str, str | None]] = {s: {} for s in store_ids}
    rows = session.scalars(select(SyncCursor).where(SyncCursor.store_id.in_(store_ids)))
    for row in rows:
        found[row.store_id][row.dataset] = row.cursor
    return found


def _read_all(
    connectors: list[Connector],
    dataset: str,
    cursors: dict[str, dict[str, str | None]],
    batch_rows: int,
) -> dict[str, _Read | BaseException]:
    def read(connector: Connector) -> _Read | BaseException:
        cursor = cursors[connector.store_id].get(dataset)
        try:
            pages: Iterator[ChangePage] = batched(connector.changes(dataset, cursor), batch_rows)
            taken = list(islice(pages, 2))
        except Exception as exc:  # the store's failure: the others go on
            return exc
        if len(taken) > 1:
            return _Read(None, cursor, too_large=True)
        full = cursor is None
        if not taken:
            # Nothing new; a store that never synced the dataset still empties its tables.
            empty = ChangePage({})
            return _Read(StoreChange(empty, full) if full else None, cursor)
        return _Read(StoreChange(taken[0], full), taken[0].cursor or cursor)

    with ThreadPoolExecutor(max_workers=max(1, min(READ_THREADS, len(connectors)))) as pool:
        return dict(zip([c.store_id for c in connectors], pool.map(read, connectors), strict=True))


def _write(
    lake: Lake,
    registry: Registry,
    dataset: str,
    reads: dict[str, _Read],
    results: dict[str, StoreSync],
) -> None:
    """One transaction for every store's change of `dataset`, then their cursors."""
    changes = {s: r.change for s, r in reads.items() if r.change is not None}
    unchanged = [s for s, r in reads.items() if r.change is None]
    for store_id in unchanged:
        results[store_id].datasets[dataset] = DatasetSync(
            dataset, False, dict.fromkeys(SOURCE_DATASETS[dataset], 0), 0, 0, reads[store_id].cursor
        )
    if not changes:
        return
    if dataset == "orders":
        full = [s for s, change in changes.items() if change.full]
        if full:
            # Before the commit: a crash after it must still rebuild every sale.
            with registry.session() as session:
                for store_id in full:
                    mark_sales_pending(session, store_id, full=True)
    written = apply_changes(lake, SOURCE_DATASETS[dataset], changes)
    with registry.session() as session:
        for store_id, change in changes.items():
            set_cursor(session, store_id, dataset, reads[store_id].cursor)
            if dataset == "orders" and not change.full:
                page = change.page
                ids = page.tables["orders"]["id"].to_pylist() if "orders" in page.tables else []
                if ids or page.deleted_ids:
                    mark_sales_pending(session, store_id, [*ids, *page.deleted_ids])
    for store_id, change in changes.items():
        rows = dict.fromkeys(SOURCE_DATASETS[dataset], 0) | written[store_id]
        results[store_id].datasets[dataset] = DatasetSync(
            dataset,
            change.full,
            rows,
            1,
            len(change.page.deleted_ids),
            reads[store_id].cursor,
        )


def _sales(
    lake: Lake, registry: Registry, store_ids: list[str], published: dict[str, int]
) -> dict[str, SalesBuild]:
    """The sales of every store's pending orders, in one transaction."""
    work: list[SalesWork] = []
    pending = {}
    with registry.session() as session:
        for store_id in store_ids:
            todo = pending_sales(session, store_id)
            if not todo:
                continue
            store = get_store(session, store_id)
            ids = None if todo.full else sorted(todo.order_ids)
            since = published.get(store_id)
            work.append(SalesWork(store_id, store.timezone, store.account.timezone, ids, since))
            pending[store_id] = todo
    if not work:
        return {}
    written = write_sales(lake, work)
    with registry.session() as session:
        for store_id, todo in pending.items():
            clear_sales_pending(session, store_id, todo)
    return {
        w.store_id: SalesBuild(
            written[w.store_id],
            0 if w.order_ids is None else len(w.order_ids),
            w.order_ids is None,
        )
        for w in work
    }


def _fail(result: StoreSync, dataset: str, exc: BaseException) -> None:
    result.failed_dataset = dataset
    if isinstance(exc, IncompleteSync):
        result.error = f"{type(exc).__name__}: {exc.detail}"
        table = SOURCE_DATASETS[dataset][0]
        result.checks.append(CheckOutcome(table, "complete", False, True, {"reason": exc.detail}))
        TALLY.count("quarry_failures", {"kind": "sync_incomplete"})
    else:
        result.error = f"{type(exc).__name__}: {exc}"
        TALLY.count("quarry_failures", {"kind": "sync"})


def _measure(
    registry: Registry, results: Iterable[StoreSync], max_stores: int, seconds: float
) -> None:
    """Each store's share of the batch's time and its rows per dataset, for /metrics (the
    batch step writes them once, pipelines.fleet.jobs)."""
    done = [r for r in results if r.datasets]
    if not done:
        return
    labels = stores_labels(registry, [r.store_id for r in done], max_stores)
    share = seconds / len(done)
    for result in done:
        for dataset, synced in result.datasets.items():
            figures = {**labels[result.store_id], "dataset": dataset}
            TALLY.observe("quarry_sync_duration_seconds", figures, share / len(result.datasets))
            TALLY.count("quarry_sync_rows", figures, sum(synced.rows.values()))
        if result.sales is not None:
            figures = {**labels[result.store_id], "dataset": "sales"}
            TALLY.count("quarry_sync_rows", figures, result.sales.rows)
