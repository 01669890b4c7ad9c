"""Warehouse assets: one sync per source dataset, the sales model, exchange rates, and the
snapshot that makes a store's run visible to readers.

Every asset does its own I/O and returns MaterializeResult metadata, never data (the default
I/O manager would pickle it into DAGSTER_HOME). Each op that writes a table holds the
concurrency pool `warehouse_<table>` of the table it leads: the child tables of a dataset
(order_lines, refunds, refund_lines; product_variants) have no other writer, so the pool of
their parent covers them. The snapshot asset publishes what they wrote.
"""

from collections.abc import Iterator
from datetime import UTC, datetime

from dagster import (
    AssetCheckResult,
    AssetExecutionContext,
    AssetKey,
    AssetsDefinition,
    AssetSpec,
    MaterializeResult,
    MetadataValue,
    asset,
    multi_asset,
)

from exports.files.cleanup import remove_files_for_store
from pipelines.partitions import STORES, store_check_spec
from pipelines.resources import FULL_TAG, QuarryResource, ResyncStatus
from pipelines.sync.dataset import sync_dataset
from pipelines.sync.measured import measured_step
from pipelines.sync.sales import build_sales
from pipelines.sync.snapshot import take_snapshot
from pipelines.sync.table_stats import store_row_count
from platforms.base import IncompleteSync
from warehouse.modelled.exchange_rates import RATES_END, RATES_START, write_rates
from warehouse.schemas import SOURCE_DATASETS, TABLES

GROUP = "warehouse"
# Rollup tables are written in the sales step (warehouse.rollups): no asset of their own.
STORE_TABLES: tuple[str, ...] = tuple(
    n for n, s in TABLES.items() if s.per_store and s.rollup_of is None
)


def pool(table: str) -> str:
    """The concurrency pool of the writers of `table` (limit 1, see pipelines.instance)."""
    return f"warehouse_{table}"


def _source_asset(dataset: str, tables: tuple[str, ...]) -> AssetsDefinition:
    @multi_asset(
        name=f"sync_{dataset}",
        specs=[
            AssetSpec(
                name,
                group_name=GROUP,
                kinds={"ducklake"},
                description=f"Table {name}: {dataset} of each store, synced from its platform.",
            )
            for name in tables
        ],
        partitions_def=STORES,
        pool=pool(tables[0]),
        check_specs=[
            store_check_spec(
                "complete",
                asset=tables[0],
                blocking=True,
                description="Every window the sync read matches the platform's own count "
                "of it (connectors that can tell; docs/shopify.md, Completeness).",
            )
        ],
    )
    def _sync(
        context: AssetExecutionContext, quarry: QuarryResource, resync_status: ResyncStatus
    ) -> Iterator[MaterializeResult | AssetCheckResult]:
        del resync_status  # required so that it brackets the run (see ResyncStatus)
        store = quarry.store(context.partition_key)
        max_stores = quarry.settings.metrics_max_stores
        try:
            with measured_step(quarry.registry, store.id, dataset, max_stores) as figures:
                result = sync_dataset(
                    quarry.lake,
                    quarry.registry,
                    quarry.connector(store),
                    dataset,
                    full=context.run.tags.get(FULL_TAG) == "true",
                    batch_rows=quarry.batch_rows,
                    log=context.log.info,
                )
                figures.rows = sum(result.rows.values())
        except IncompleteSync as exc:
            # What was committed before the window stays (its cursor too) but is not
            # published: the failed blocking check fails this step, so the sales model
            # and the store's snapshot wait for a sync that reads the window whole.
            for name in tables:
                yield MaterializeResult(
                    asset_key=name,
                    metadata={
                        "store": f"{store.name} ({store.id})",
                        "incomplete": True,
                        "dagster/row_count": store_row_count(quarry.lake, name, store.id),
                    },
                )
            yield AssetCheckResult(
                asset_key=tables[0],
                check_name="complete",
                passed=False,
                description=exc.detail,
                metadata={"reason": MetadataValue.text(exc.detail)},
            )
            return
        for name in tables:
            yield MaterializeResult(
                asset_key=name,
                metadata={
                    "store": f"{store.name} ({store.id})",
                    "rows_written": result.rows.get(name, 0),
                    "dagster/row_count": store_row_count(quarry.lake, name, store.id),
                    "full_sync": result.full,
                    "batches": result.batches,
                    "parents_deleted": result.deleted,
                    "cursor": MetadataValue.text(result.cursor or ""),
                },
            )
        yield AssetCheckResult(asset_key=tables[0], check_name="complete", passed=True)

    return _sync


SOURCE_ASSETS = [_source_asset(dataset, tables) for dataset, tables in SOURCE_DATASETS.items()]


@asset(
    partitions_def=STORES,
    deps=list(SOURCE_DATASETS["orders"]),
    pool=pool("sales"),
    group_name=GROUP,
    kinds={"duckdb", "ducklake"},
    description=(
        "Table sales: one row per sale event (order lines when ordered, returns when "
        "refunded, shipping, duties, fees), rebuilt for the orders the sync changed."
    ),
)
def sales(context: AssetExecutionContext, quarry: QuarryResource) -> MaterializeResult:
    max_stores = quarry.settings.metrics_max_stores
    with measured_step(quarry.registry, context.partition_key, "sales", max_stores) as figures:
        built = build_sales(quarry.lake, quarry.registry, context.partition_key)
        figures.rows = built.rows
    return MaterializeResult(
        metadata={
            "store": quarry.store_label(context.partition_key),
            "rows_written": built.rows,
            "orders_rebuilt": built.orders if not built.full else "all",
            "dagster/row_count": store_row_count(quarry.lake, "sales", context.partition_key),
        }
    )


@asset(
    pool=pool("exchange_rates"),
    group_name=GROUP,
    kinds={"ducklake"},
    description="Table exchange_rates: units of each currency per 1 USD, per day.",
)
def exchange_rates(quarry: QuarryResource) -> MaterializeResult:
    provider = quarry.rates()
    rates = provider.rates(RATES_START, max(RATES_END, datetime.now(UTC).date()))
    written = write_rates(quarry.lake, rates)
    return MaterializeResult(
        metadata={
            "provider": provider.name,
            "rows_written": written,
            "dagster/row_count": store_row_count(quarry.lake, "exchange_rates", None),
        }
    )


@asset(
    partitions_def=STORES,
    deps=[AssetKey(name) for name in STORE_TABLES],
    group_name=GROUP,
    description=(
        "The store's consistent view: once every table of a run is written, publishes the "
        "lake's snapshot for readers of the store (unless nothing of it changed) and "
        "sets the store's last_synced_at. After a full re-sync, removes the export files "
        "that held the store's data."
    ),
)
def warehouse_snapshot(context: AssetExecutionContext, quarry: QuarryResource) -> MaterializeResult:
    store_id = context.partition_key
    snapshot = take_snapshot(quarry.lake, quarry.registry, store_id)
    removed: list[str] = []
    if context.run.tags.get(FULL_TAG) == "true":
        # Export files hold the store's data as it was before the re-sync: they go once
        # the re-synced data is what readers see (the contract's file lifetime).
        removed = remove_files_for_store(
            quarry.settings, quarry.registry, store_id, "store_resynced"
        )
    return MaterializeResult(
        metadata={
            "store": quarry.store_label(store_id),
            "lake_version": snapshot.version,
            "new_snapshot": snapshot.recorded,
            "export_files_removed": len(removed),
        }
    )


STORE_ASSETS = [*SOURCE_ASSETS, sales, warehouse_snapshot]
