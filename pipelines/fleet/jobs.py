"""The fleet job: one run syncs every store that has something new, in batches.

    probe_fleet ──(one output per batch)──> sync_batch ──(all batches)──> fleet_report

- probe_fleet asks every store's platform whether anything changed (pipelines.fleet.probe),
  publishes a new snapshot for stores whose only news is global (exchange rates), and packs
  the stores to sync into batches (pipelines.fleet.batches). Its `tick` output's metadata
  says what it found for every store: the Dagster UI's record of the tick.
- sync_batch syncs its stores together (pipelines.fleet.batch_sync) and logs
  each store's materializations and check results for its partition (pipelines.fleet.events).
  A store that fails is reported and the batch goes on. Steps are independent: on Celery
  they spread over the worker hosts.
- fleet_report lists what each store's sync did; the failed ones (metadata
  `failed_stores`) are synced again alone, as a one-partition `sync_stores` run, by the
  sensor `fleet_retries` (or by `quarry sync` itself), which fails in Dagster's usual way if
  the store fails again, and alerts name it.
"""

from collections.abc import Iterator
from functools import partial
from typing import Any

from dagster import (
    Config,
    DynamicOut,
    DynamicOutput,
    In,
    MetadataValue,
    Nothing,
    OpExecutionContext,
    Out,
    Output,
    ResourceParam,
    job,
    op,
)

from pipelines.fleet.batch_sync import sync_stores_together
from pipelines.fleet.batches import STORES_PER_BATCH, plan_batches
from pipelines.fleet.events import log_events, store_events
from pipelines.fleet.executor import fleet_executor
from pipelines.fleet.probe import counts, probe_stores
from pipelines.fleet.progress import FleetProgress
from pipelines.instance import release_abandoned_runs
from pipelines.progress import RunOutcome
from pipelines.resources import QuarryResource, settle_syncing_stores
from pipelines.run_logger import LOGGERS_CONFIG
from pipelines.sync.snapshot import take_snapshot
from quarry.errors import NotFound
from registry.measures import write_tally

FLEET_JOB = "sync_fleet"
TICK_OUTPUT = "tick"
FAILED_STORES = "failed_stores"


class FleetConfig(Config):
    """Which stores the run probes (every store of the registry when unset), and how many
    stores a step carries at most."""

    store_ids: list[str] | None = None
    stores_per_batch: int = STORES_PER_BATCH


@op(
    out={"batches": DynamicOut(list, io_manager_key="run_files"), TICK_OUTPUT: Out(Nothing)},
    description="Asks every store's platform whether anything changed since its cursors; "
    "batches the stores that must sync.",
)
def probe_fleet(
    context: OpExecutionContext,
    config: FleetConfig,
    quarry: QuarryResource,
    fleet_progress: ResourceParam[FleetProgress],
) -> Iterator[Output[Any] | DynamicOutput[list[dict[str, Any]]]]:
    # What runs killed mid-way left: their pool slots, and a store shown `syncing` by a
    # full re-sync that never ended.
    release_abandoned_runs(context.instance, quarry.settings.role_id)
    settle_syncing_stores(context.instance, quarry.registry)
    probes = probe_stores(quarry.settings, quarry.registry, quarry.lake, config.store_ids)
    progress = fleet_progress
    for probe in probes:
        if probe.republish:
            take_snapshot(quarry.lake, quarry.registry, probe.store_id)
        if not probe.needs_sync:
            progress.finished(RunOutcome(probe.store_id, probe.name, context.run_id, True, 0.0))
    batches = plan_batches(probes, stores_per_batch=config.stores_per_batch)
    yield Output(
        None,
        TICK_OUTPUT,
        metadata={
            **counts(probes),
            "batches": len(batches),
            "stores": MetadataValue.json(
                {p.store_id: {"name": p.name, "probe": p.outcome} for p in probes}
            ),
        },
    )
    for batch in batches:
        yield DynamicOutput(
            [
                {"store_id": p.store_id, "name": p.name, "datasets": list(p.datasets)}
                for p in batch.stores
            ],
            output_name="batches",
            mapping_key=batch.key,
        )


@op(
    out=Out(list, io_manager_key="run_files"),
    description="Syncs the stores of one batch.",
)
def sync_batch(
    context: OpExecutionContext,
    batch: list[dict[str, Any]],
    quarry: QuarryResource,
    fleet_progress: ResourceParam[FleetProgress],
) -> list[dict[str, Any]]:
    progress = fleet_progress
    outcomes = []
    names = {item["store_id"]: item["name"] for item in batch}
    # Each store's steps, told once its batch is done: told as they happen, the stores of
    # a batch would interleave (they are written together).
    steps: dict[str, list[tuple[str, bool, float, dict[str, int]]]] = {}
    stores = []
    for item in batch:
        store_id, name = item["store_id"], item["name"]
        try:
            store = quarry.store(store_id)
        except NotFound:
            outcomes.append({"store_id": store_id, "name": name, "outcome": "removed"})
            continue
        stores.append((quarry.connector(store), tuple(item["datasets"])))
    results = sync_stores_together(
        quarry.lake,
        quarry.registry,
        stores,
        batch_rows=quarry.batch_rows,
        max_stores=quarry.settings.metrics_max_stores,
        report=lambda store_id: partial(_heard, steps.setdefault(store_id, [])),
    )
    every_check = quarry.settings.fleet_table_checks == "all"
    events = []
    for result in results:
        store_id, name = result.store_id, names[result.store_id]
        progress.store_started(store_id, name)
        for step in steps.get(store_id, []):
            progress.step(store_id, name, *step)
        progress.finished(
            RunOutcome(
                store_id,
                name,
                context.run_id,
                result.error is None,
                result.seconds,
                # By table name, as a run per store listed its materializations.
                dict(sorted(result.rows.items())),
                failed_step=result.failed_step,
                error=result.error,
            )
        )
        events.append(store_events(result, f"{name} ({store_id})", every_check=every_check))
        if result.error:
            context.log.warning(f"store {name} ({store_id}) failed: {result.error}")
        outcomes.append(
            {
                "store_id": store_id,
                "name": name,
                "outcome": "failed" if result.error else "synced",
                "error": result.error,
                "rows": result.rows,
                "seconds": round(result.seconds, 3),
            }
        )
    log_events(context, events)
    write_tally(quarry.registry)  # the batch's figures for /metrics, in one write
    return outcomes


def _heard(
    heard: list[tuple[str, bool, float, dict[str, int]]],
    step: str,
    success: bool,
    seconds: float,
    rows: dict[str, int],
) -> None:
    heard.append((step, success, seconds, rows))


@op(
    ins={"synced": In(list)},
    out=Out(Nothing),
    description="What each store's sync did; failed stores are retried alone.",
)
def fleet_report(context: OpExecutionContext, synced: list[list[dict[str, Any]]]) -> Output[None]:
    outcomes = [outcome for batch in synced for outcome in batch]
    failed = [o["store_id"] for o in outcomes if o["outcome"] == "failed"]
    return Output(
        None,
        metadata={
            "synced": sum(o["outcome"] == "synced" for o in outcomes),
            "failed": len(failed),
            FAILED_STORES: MetadataValue.json(failed),
            "stores": MetadataValue.json({o["store_id"]: o for o in outcomes}),
        },
    )


@job(
    name=FLEET_JOB,
    executor_def=fleet_executor,
    config=LOGGERS_CONFIG,
    description="Probe every store (or the configured ones) and sync those with changes, "
    "many stores per step; in process or on Celery workers (QUARRY_FLEET_EXECUTOR).",
)
def sync_fleet() -> None:
    fleet_report(probe_fleet().batches.map(sync_batch).collect())
