"""Asset checks on the warehouse tables, per store partition.

- valid_keys: no two rows of the store's partition share a primary key, and no row lacks
  its id, store_id or parent key (one check: every check costs a run three events in
  Dagster's storage, about 60 ms). An incremental run looks for duplicates among the keys
  inserted since the store's published snapshot only, which passed this check when it was
  published; a full sync, or a store never published, checks the whole partition;
- matches_platform (parent tables of a source dataset): the store's row count equals what
  the platform reports now (connector.count).

The checks of a store's tables are partitioned by store, like the sync assets: a run checks
its store, and the result is that store's. Each result names its store (metadata `store`),
and its figures are labelled with it (`rows · Main Street (st_...)`): the UI plots each
label on its own, so a check's plots draw a line per store, not one line through every
store's values. (Run without a partition, outside Quarry's jobs, they check every store.)
valid_keys blocks: a store whose data fails it gets no new snapshot, so readers keep the
previous one. matches_platform only warns, since a live store keeps taking orders between
the last page and the count.
"""

from collections.abc import Iterator

from dagster import (
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetChecksDefinition,
    AssetCheckSeverity,
    AssetCheckSpec,
    multi_asset_check,
)

from pipelines.partitions import store_check_spec
from pipelines.resources import FULL_TAG, QuarryResource
from pipelines.sync.snapshot import changed_since
from pipelines.sync.table_stats import PLATFORM_DATASETS, key_columns, table_checks
from registry.accounts import list_stores
from warehouse.schemas import SOURCE_DATASETS
from warehouse.snapshots import latest_snapshots


def _specs(table: str) -> list[AssetCheckSpec]:
    # Per store like the tables; exchange rates are global.
    spec = AssetCheckSpec if table == "exchange_rates" else store_check_spec
    specs = [
        spec(
            "valid_keys",
            asset=table,
            blocking=True,
            description=f"Ids are unique; no null {', '.join(key_columns(table))}.",
        ),
    ]
    if table in PLATFORM_DATASETS:
        specs.append(
            spec(
                "matches_platform",
                asset=table,
                description="Row count equals the platform's record count.",
            )
        )
    return specs


def _table_checks(name: str, tables: tuple[str, ...]) -> AssetChecksDefinition:
    @multi_asset_check(
        name=f"check_{name}",
        specs=[spec for table in tables for spec in _specs(table)],
    )
    def _check(
        context: AssetCheckExecutionContext, quarry: QuarryResource
    ) -> Iterator[AssetCheckResult]:
        store_id = context.partition_key if context.has_partition_key else None
        since = None
        if store_id is not None and context.run.tags.get(FULL_TAG) != "true":
            with quarry.registry.session() as session:
                since = latest_snapshots(session, [store_id]).get(store_id)
        for table in tables:
            yield from check_table(quarry, table, store_id, since=since)

    return _check


def check_table(
    quarry: QuarryResource, table: str, store_id: str | None, *, since: int | None = None
) -> Iterator[AssetCheckResult]:
    """The results of every check of `table` for one store (or all when None). With
    `since`, the store's published lake version, keys are checked among the rows inserted
    after it (pipelines.sync.table_stats.key_health)."""
    label = quarry.store_label(store_id) if store_id is not None else None
    store = {"store": label} if label is not None else {}

    def figure(name: str) -> str:
        return name if label is None else f"{name} · {label}"

    outcomes = table_checks(
        quarry.lake,
        table,
        store_id,
        lambda dataset: _platform_count(quarry, dataset, store_id),
        since=since,
    )
    for outcome in outcomes:
        yield AssetCheckResult(
            asset_key=table,
            check_name=outcome.name,
            passed=outcome.passed,
            severity=AssetCheckSeverity.ERROR if outcome.blocking else AssetCheckSeverity.WARN,
            metadata={**store, **{figure(k): v for k, v in outcome.figures.items()}},
        )


def _platform_count(quarry: QuarryResource, dataset: str, store_id: str | None) -> int:
    if store_id is not None:
        return quarry.connector(quarry.store(store_id)).count(dataset)
    with quarry.registry.session() as session:
        stores = list(list_stores(session))
    return sum(quarry.connector(store).count(dataset) for store in stores)


@multi_asset_check(
    name="check_synced",
    specs=[
        store_check_spec(
            "synced",
            asset="warehouse_snapshot",
            blocking=True,
            description="The store's last sync published everything it committed (a fleet "
            "run reports a store that failed here).",
        )
    ],
)
def check_synced(
    context: AssetCheckExecutionContext, quarry: QuarryResource
) -> Iterator[AssetCheckResult]:
    store_id = context.partition_key if context.has_partition_key else None
    with quarry.registry.session() as session:
        published = latest_snapshots(session, None if store_id is None else [store_id])
    behind = [
        s for s, version in published.items() if changed_since(quarry.lake, s, version, own=True)
    ]
    label = quarry.store_label(store_id) if store_id is not None else None
    yield AssetCheckResult(
        asset_key="warehouse_snapshot",
        check_name="synced",
        passed=not behind and (store_id is None or store_id in published),
        metadata={"store": label} if label else {},
    )


TABLE_CHECKS = [
    *(_table_checks(dataset, tables) for dataset, tables in SOURCE_DATASETS.items()),
    _table_checks("sales", ("sales",)),
    _table_checks("exchange_rates", ("exchange_rates",)),
    check_synced,
]
