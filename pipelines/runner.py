"""Sync runs started by the CLI: in this process, on the Dagster instance of DAGSTER_HOME.

The runs are ordinary Dagster runs of the `sync_stores` / `full_resync` / `exchange_rates`
jobs: they show in the UI, claim the same concurrency pools as runs the daemon launches,
and need no daemon. Each run is tagged with this host and process id, so a later sync can
release what a killed one left claimed (the pools would otherwise wait for it forever).
"""

from __future__ import annotations

import time
import uuid
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from dagster import (
    AssetKey,
    BetaWarning,
    DagsterEventType,
    DagsterInstance,
    DagsterRunStatus,
    ExecuteInProcessResult,
    PreviewWarning,
    SupersessionWarning,
)

from pipelines.fleet.jobs import FLEET_JOB
from pipelines.fleet.progress import FleetProgress
from pipelines.fleet.run_config import FLEET_TAG, fleet_run_config
from pipelines.instance import WORKER_TAG, open_instance, release_abandoned_runs, store_tags
from pipelines.partitions import sync_store_partitions
from pipelines.progress import Report, RunFollower, RunOutcome, RunStarted, StepFinished
from quarry.settings import Settings
from quarry.workers import worker_identity
from registry.accounts import get_store, list_stores
from registry.db import Registry

INTERRUPTED = "DagsterExecutionInterruptedError"
# Dagster's console logger would print every event and each failure's traceback: the CLI
# prints its own one-line summary, and the full log stays in the run, in the UI.
QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}


def _ignore(_event: RunStarted | StepFinished | RunOutcome) -> None:
    pass


def sync_stores(
    settings: Settings,
    registry: Registry,
    store_ids: Sequence[str] | None = None,
    *,
    full: bool = False,
    resources: Mapping[str, Any] | None = None,
    report: Report = _ignore,
) -> list[RunOutcome]:
    """Sync exchange rates unless they were synced today (UTC), then the stores (every
    store of the registry when `store_ids` is None). Unknown store ids raise NotFound
    before anything runs.

    Incremental: one fleet run (pipelines.fleet) probes the stores and syncs those with
    changes in batches; each store that fails there is synced again alone, as a run of
    `sync_stores`, whose outcome is the store's. `full`: a `full_resync` run per store; after
    an interrupted run (Ctrl-C) no other starts. `report` hears each store start, each step
    that wrote rows or failed, and each outcome as they happen. `resources` overrides the
    code location's resources (tests)."""
    with open_instance(settings) as instance:
        release_abandoned_runs(instance, settings.role_id)
        runs, wanted = _planned_runs(registry, instance, store_ids, full=full)
        outcomes: list[RunOutcome] = []
        for job_name, label, name, partition_key in runs:
            report(RunStarted(label, name))
            outcome = _run(
                instance, settings, job_name, label, name, partition_key, resources, report
            )
            report(outcome)
            outcomes.append(outcome)
            if outcome.interrupted:
                return outcomes
        if not full:
            outcomes += _sync_fleet(instance, settings, wanted, resources, report)
    return outcomes


def _planned_runs(
    registry: Registry,
    instance: DagsterInstance,
    store_ids: Sequence[str] | None,
    *,
    full: bool,
) -> tuple[list[tuple[str, str, str, str | None]], dict[str, str]]:
    """(job, label, name, partition) of each run of a sync before the fleet's, in order:
    exchange rates unless synced today (the stores' snapshots record them), then, when
    `full`, a re-sync of each store; and the stores wanted, id -> name (every store when
    `store_ids` is None; an unknown id raises NotFound before anything runs). Adds the
    stores' partitions to the instance."""
    with registry.session() as session:
        every = {store.id: store.name for store in list_stores(session)}
        wanted = list(every) if store_ids is None else [get_store(session, s).id for s in store_ids]
    sync_store_partitions(instance, every)
    runs: list[tuple[str, str, str, str | None]] = []
    if not _rates_synced_today(instance):
        runs.append(("sync_exchange_rates", "exchange_rates", "exchange rates", None))
    if full:
        runs += [("full_resync", store_id, every[store_id], store_id) for store_id in wanted]
    return runs, {store_id: every[store_id] for store_id in wanted}


def _sync_fleet(
    instance: DagsterInstance,
    settings: Settings,
    stores: Mapping[str, str],
    resources: Mapping[str, Any] | None,
    report: Report,
) -> list[RunOutcome]:
    """One fleet run of `stores` (id -> name) in this process, then a run of its own for
    each store that failed in it. Returns an outcome per store."""
    if not stores:
        return []
    heard: dict[str, RunOutcome] = {}

    def hear(event: RunStarted | StepFinished | RunOutcome) -> None:
        if isinstance(event, RunOutcome):
            heard[event.label] = event
            if not event.success:
                return  # the store's own run below decides, and reports
        report(event)

    run_id = str(uuid.uuid4())
    tags = {WORKER_TAG: worker_identity(settings.role_id), FLEET_TAG: "cli"}
    with _without_dagster_notices():
        from pipelines.definitions import defs

        result = defs.resolve_job_def(FLEET_JOB).execute_in_process(
            run_config=fleet_run_config(settings, list(stores), in_process=True) | QUIET,
            instance=instance,
            raise_on_error=False,
            run_id=run_id,
            tags=tags,
            resources={**(resources or {}), "fleet_progress": FleetProgress(hear)},
        )
    outcomes: list[RunOutcome] = []
    _, error = _first_failure(result)
    for store_id, name in stores.items():
        outcome = heard.get(store_id)
        if outcome is None and error and error.startswith(INTERRUPTED):
            # Ctrl-C: no store after the interrupted one starts.
            outcomes.append(
                RunOutcome(store_id, name, run_id, False, 0.0, error=error, interrupted=True)
            )
            report(outcomes[-1])
            return outcomes
        if outcome is not None and outcome.success:
            outcomes.append(outcome)
            continue
        # Failed in the fleet run (or never reached): alone now, in Dagster's usual way.
        report(RunStarted(store_id, name))
        retried = _run(
            instance, settings, "sync_stores", store_id, name, store_id, resources, report
        )
        report(retried)
        outcomes.append(retried)
        if retried.interrupted:
            break
    return outcomes


def _run(
    instance: DagsterInstance,
    settings: Settings,
    job_name: str,
    label: str,
    name: str,
    partition_key: str | None,
    resources: Mapping[str, Any] | None,
    report: Report,
) -> RunOutcome:
    """Run `job_name` (for one store when `partition_key` is set) in this process."""
    tags = {WORKER_TAG: worker_identity(settings.role_id)}
    if partition_key:
        tags |= store_tags(partition_key, name)
    started = time.monotonic()
    run_id = str(uuid.uuid4())
    follower = RunFollower(instance, run_id, label, name, report)
    with _without_dagster_notices(), follower.following():
        from pipelines.definitions import defs

        result = defs.resolve_job_def(job_name).execute_in_process(
            run_config=QUIET,
            instance=instance,
            partition_key=partition_key,
            raise_on_error=False,
            run_id=run_id,
            tags=tags,
            resources=resources,
        )
    seconds = time.monotonic() - started
    step, error = _first_failure(result)
    return RunOutcome(
        label=label,
        name=name,
        run_id=result.run_id,
        success=result.success,
        seconds=seconds,
        rows=_rows_written(result),
        failed_step=step,
        error=error,
        interrupted=bool(error and error.startswith(INTERRUPTED)),
    )


@contextmanager
def _without_dagster_notices() -> Iterator[None]:
    """Dagster's beta, preview and supersession notices speak to the authors of the
    definitions, not to someone running `quarry sync`: keep them off the terminal."""
    with warnings.catch_warnings():
        for category in (BetaWarning, PreviewWarning, SupersessionWarning):
            warnings.filterwarnings("ignore", category=category)
        yield


def _rates_synced_today(instance: DagsterInstance) -> bool:
    """Rates are daily: one materialization per UTC day is enough for every sync."""
    event = instance.get_latest_materialization_event(AssetKey("exchange_rates"))
    if event is None:
        return False
    synced = datetime.fromtimestamp(event.timestamp, UTC).date()
    return synced == datetime.now(UTC).date()


def _rows_written(result: ExecuteInProcessResult) -> dict[str, int]:
    rows: dict[str, int] = {}
    for event in result.get_asset_materialization_events():
        materialization = event.step_materialization_data.materialization
        value = materialization.metadata.get("rows_written")
        if value is not None:
            rows[materialization.asset_key.to_user_string()] = int(value.value)  # type: ignore[arg-type]
    return rows


def _first_failure(result: ExecuteInProcessResult) -> tuple[str | None, str | None]:
    """The step that failed first and the innermost error's first line."""
    for event in result.all_events:
        if event.event_type != DagsterEventType.STEP_FAILURE or event.step_failure_data is None:
            continue
        error = event.step_failure_data.error
        while error is not None and error.cause is not None:
            error = error.cause
        if error is None:
            return event.step_key, "failed"
        # "quarry.errors.NotFound: no demo data ..." -> "NotFound: no demo data ..."
        message = error.message.strip().splitlines()[0]
        _, _, detail = message.partition(": ")
        return event.step_key, f"{error.cls_name}: {detail}" if detail else error.cls_name
    if not result.success:
        return None, "the run failed before any step"
    return None, None


def step_asset(step_key: str | None) -> str:
    """What a user calls the step: `sync_orders` -> orders, `check_orders` -> checks of
    orders, assets by their name."""
    if step_key is None:
        return "run"
    if step_key.startswith("sync_"):
        return step_key.removeprefix("sync_")
    if step_key.startswith("check_"):
        return f"checks of {step_key.removeprefix('check_')}"
    return step_key


# Seconds between looks at a submitted run's status.
POLL_SECONDS = 1.0


def sync_stores_on_worker(
    settings: Settings,
    registry: Registry,
    store_ids: Sequence[str] | None = None,
    *,
    full: bool = False,
    timeout: float = 6 * 3600,
    report: Report = _ignore,
) -> list[RunOutcome]:
    """As sync_stores, but the runs are submitted to Dagster (QUARRY_DAGSTER_URL) and execute
    in the worker role (the fleet run's steps on its executor: QUARRY_FLEET_EXECUTOR);
    waits for them in order, following their events in the shared storage. A run the
    webserver refuses raises."""
    from pipelines.exports.launcher import submit
    from pipelines.fleet.sensors import fleet_outcomes

    with open_instance(settings) as instance:
        outcomes = []
        runs, wanted = _planned_runs(registry, instance, store_ids, full=full)
        for job_name, label, name, partition_key in runs:
            tags = (
                {}
                if partition_key is None
                else {"dagster/partition": partition_key} | store_tags(partition_key, name)
            )
            report(RunStarted(label, name))
            run_id = submit(settings, job_name, tags)
            outcome = _wait(instance, run_id, label, name, timeout, report)
            report(outcome)
            outcomes.append(outcome)
        if full or not wanted:
            return outcomes
        run_id = submit(
            settings, FLEET_JOB, {FLEET_TAG: "cli"}, fleet_run_config(settings, list(wanted))
        )
        _wait(instance, run_id, "fleet", "fleet", timeout, _ignore)
        synced = fleet_outcomes(instance, run_id)
        for store_id, name in wanted.items():
            done = synced.get(store_id)
            if done is not None and done.success:
                report(done)
                outcomes.append(done)
                continue
            report(RunStarted(store_id, name))
            tags = {"dagster/partition": store_id} | store_tags(store_id, name)
            retried = _wait(
                instance, submit(settings, "sync_stores", tags), store_id, name, timeout, report
            )
            report(retried)
            outcomes.append(retried)
    return outcomes


def _wait(
    instance: DagsterInstance, run_id: str, label: str, name: str, timeout: float, report: Report
) -> RunOutcome:
    """Follow submitted run `run_id` until it ends; its outcome."""
    from dagster import DagsterEventType as Event

    from pipelines.exports.runs import failure_reason

    started = time.monotonic()
    follower = RunFollower(instance, run_id, label, name, report)
    with follower.following():
        run = instance.get_run_by_id(run_id)
        while run is None or not run.is_finished:
            if time.monotonic() - started > timeout:
                raise TimeoutError(f"run {run_id} of {label} did not end in {timeout:.0f} s")
            time.sleep(POLL_SECONDS)
            run = instance.get_run_by_id(run_id)
    success = run.status == DagsterRunStatus.SUCCESS
    rows: dict[str, int] = {}
    for record in instance.get_records_for_run(run_id, of_type=Event.ASSET_MATERIALIZATION).records:
        event = record.event_log_entry.dagster_event
        materialization = event.step_materialization_data.materialization if event else None
        value = materialization.metadata.get("rows_written") if materialization else None
        if materialization is not None and value is not None:
            rows[materialization.asset_key.to_user_string()] = int(value.value)  # type: ignore[arg-type]
    return RunOutcome(
        label=label,
        name=name,
        run_id=run_id,
        success=success,
        seconds=time.monotonic() - started,
        rows=rows,
        error=None if success else failure_reason(instance, run_id) or "failed",
    )
