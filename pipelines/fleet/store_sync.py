"""Sync one store whole, in the calling thread: every source dataset, the sales of changed
orders, the checks, then the store's published snapshot. What a `sync_stores` run does in
its steps, without a run per store, for the fleet's batches (pipelines.fleet.jobs).

A store's failure is its own: it is returned, never raised, so the other stores of a batch
are still synced. What the store committed before failing stays unpublished, its cursor at
the last committed page; the probe sees those commits and the next tick syncs it again.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from pipelines.sync.dataset import DatasetSync, sync_dataset
from pipelines.sync.measured import measured_step
from pipelines.sync.sales import SalesBuild, build_sales
from pipelines.sync.snapshot import SnapshotTaken, take_snapshot
from pipelines.sync.table_stats import CheckOutcome, stores_table_checks
from platforms.base import Connector, IncompleteSync
from registry.db import Registry
from warehouse.lake import Lake
from warehouse.schemas import SOURCE_DATASETS
from warehouse.snapshots import latest_snapshots

# Hears each step of a store's sync as it ends: its step key as a run of `sync_stores`
# names it (sync_orders, sales), whether it succeeded, its seconds and rows per table.
StepReport = Callable[[str, bool, float, dict[str, int]], None]


def _ignore(_step: str, _success: bool, _seconds: float, _rows: dict[str, int]) -> None:
    pass


@dataclass
class StoreSync:
    """What syncing one store did; `error` says why it failed (None: it succeeded)."""

    store_id: str
    datasets: dict[str, DatasetSync] = field(default_factory=dict)
    sales: SalesBuild | None = None
    checks: list[CheckOutcome] = field(default_factory=list)
    snapshot: SnapshotTaken | None = None
    error: str | None = None
    failed_dataset: str | None = None
    seconds: float = 0.0

    @property
    def failed_step(self) -> str | None:
        """The step of a `sync_stores` run that would have failed: sync_<dataset>, the
        checks, or None."""
        if self.error is None:
            return None
        if self.failed_dataset is not None:
            return f"sync_{self.failed_dataset}"
        return "warehouse_snapshot"

    @property
    def rows(self) -> dict[str, int]:
        """Rows written per table (sales included)."""
        rows: dict[str, int] = {}
        for result in self.datasets.values():
            for table, count in result.rows.items():
                rows[table] = rows.get(table, 0) + count
        if self.sales is not None:
            rows["sales"] = self.sales.rows
        return rows

    @property
    def full(self) -> bool:
        """Whether any dataset was synced from the beginning."""
        return any(d.full for d in self.datasets.values())

    def touched(self, table: str) -> bool:
        """Whether the sync wrote to `table` (rows or deletions), or rebuilt it."""
        dataset = next((d for d, tables in SOURCE_DATASETS.items() if table in tables), None)
        if dataset is None:
            return self.sales is not None and (self.sales.rows > 0 or self.sales.orders > 0)
        result = self.datasets.get(dataset)
        return result is not None and (
            result.full or result.rows.get(table, 0) > 0 or result.deleted > 0
        )


def sync_store(
    lake: Lake,
    registry: Registry,
    connector: Connector,
    *,
    datasets: tuple[str, ...] = tuple(SOURCE_DATASETS),
    batch_rows: int = 50_000,
    max_stores: int = 0,
    report: StepReport = _ignore,
) -> StoreSync:
    """Sync the connector's store: `datasets` (incrementally, from the beginning where no
    cursor is saved), then sales, checks and snapshot. Never raises for the store's own
    failures (the platform's, a failed check): they are in the result. Each step's time and
    rows are tallied for /metrics (labelled by store up to `max_stores` stores); the
    caller writes the tally (registry.measures.write_tally)."""
    store_id = connector.store_id
    result = StoreSync(store_id)
    started = time.monotonic()
    try:
        with registry.session() as session:
            since = latest_snapshots(session, [store_id]).get(store_id)
        for dataset in datasets:
            result.failed_dataset = dataset
            step = time.monotonic()
            with measured_step(registry, store_id, dataset, max_stores, write=False) as figures:
                done = sync_dataset(
                    lake, registry, connector, dataset, full=False, batch_rows=batch_rows
                )
                figures.rows = sum(done.rows.values())
            result.datasets[dataset] = done
            report(f"sync_{dataset}", True, time.monotonic() - step, done.rows)
        result.failed_dataset = None
        step = time.monotonic()
        with measured_step(registry, store_id, "sales", max_stores, write=False) as figures:
            result.sales = build_sales(lake, registry, store_id)
            figures.rows = result.sales.rows
        if result.sales.rows or result.sales.orders or result.sales.full:
            report("sales", True, time.monotonic() - step, {"sales": result.sales.rows})
        published = {} if since is None else {store_id: since}
        check_stores(lake, {store_id: connector}, [result], published)
        if result.error is None:
            result.snapshot = take_snapshot(lake, registry, store_id)
    except IncompleteSync as exc:
        result.error = f"{type(exc).__name__}: {exc.detail}"
        report(f"sync_{result.failed_dataset}", False, time.monotonic() - started, {})
        table = SOURCE_DATASETS[result.failed_dataset or "orders"][0]
        result.checks.append(CheckOutcome(table, "complete", False, True, {"reason": exc.detail}))
    except Exception as exc:  # the store's failure, whatever its kind: the batch goes on
        result.error = f"{type(exc).__name__}: {exc}"
        if result.failed_dataset is not None:
            report(f"sync_{result.failed_dataset}", False, time.monotonic() - started, {})
    result.seconds = time.monotonic() - started
    return result


def check_stores(
    lake: Lake,
    connectors: Mapping[str, Connector],
    results: Sequence[StoreSync],
    published: Mapping[str, int],
) -> None:
    """Add to each result its checks: valid_keys of every table its sync touched (among
    the rows inserted after its published snapshot, or the whole partition on a first or
    full sync), matches_platform (a warning), and complete of each dataset it read; each
    table's checks one query for all the stores that touched it. A result whose blocking
    check failed gets the error."""
    by_store = {result.store_id: result for result in results}
    tables = [t for tables in SOURCE_DATASETS.values() for t in tables] + ["sales"]
    for table in tables:
        touched = {
            r.store_id: None if r.full else published.get(r.store_id)
            for r in results
            if r.touched(table)
        }
        if not touched:
            continue
        counts = {s: connectors[s].count for s in touched}
        for store_id, outcomes in stores_table_checks(lake, table, touched, counts).items():
            by_store[store_id].checks += outcomes
    for result in results:
        for dataset in result.datasets:
            result.checks.append(CheckOutcome(SOURCE_DATASETS[dataset][0], "complete", True, True))
        failed = _failed_checks(result)
        if failed:
            result.error = "failed check: " + ", ".join(f"{c.table}.{c.name}" for c in failed)


def _failed_checks(result: StoreSync) -> list[CheckOutcome]:
    """The blocking checks of `result` that failed."""
    return [c for c in result.checks if c.blocking and not c.passed]
