"""Old runs go, with their events; a run holding some partition's latest materialization or
check result stays, so the UI never shows a synced store's partition as missing."""

from __future__ import annotations

from datetime import timedelta

import pytest
from dagster import DagsterEventType, DagsterInstance

from cli.demo_account import advance_demo
from pipelines.definitions import defs
from pipelines.maintenance.run_retention import prune_runs, runs_holding_latest_events
from pipelines.runner import sync_stores
from quarry.files import run_files
from quarry.settings import Settings
from registry.db import Registry
from registry.models import utcnow

pytestmark = pytest.mark.slow


def _latest(instance: DagsterInstance) -> dict[tuple[str, str], int]:
    """Every asset partition's latest materialization, by storage id."""
    graph = defs.get_repository_def().asset_graph
    latest = {}
    for key in graph.get_all_asset_keys():
        by_partition = instance.event_log_storage.get_latest_storage_id_by_partition(
            key, DagsterEventType.ASSET_MATERIALIZATION
        )
        for partition, storage_id in by_partition.items():
            latest[(key.to_user_string(), partition)] = storage_id
    return latest


def _prune(instance: DagsterInstance, settings: Settings) -> tuple[int, int]:
    graph = defs.get_repository_def().asset_graph
    protected = runs_holding_latest_events(
        instance, graph.get_all_asset_keys(), list(graph.asset_check_keys)
    )
    # Every finished run counts as old: only what it holds keeps it.
    result = prune_runs(instance, utcnow() + timedelta(days=1), protected, run_files(settings))
    return result.deleted, result.kept_for_history


def test_old_runs_go_but_never_the_latest_events_of_a_partition(
    settings: Settings,
    registry: Registry,
    instance: DagsterInstance,
    demo_account: str,
    store_ids: list[str],
) -> None:
    first = sync_stores(settings, registry)
    quiet = sync_stores(settings, registry)  # nothing changed: a run that holds nothing new
    [quiet_run] = {o.run_id for o in quiet}
    [first_fleet] = {o.run_id for o in first if o.label != "exchange_rates"}
    assert run_files(settings).keys(first_fleet), "the fleet run handed values between steps"
    before = _latest(instance)
    assert {store for _table, store in before} >= set(store_ids)

    deleted, kept = _prune(instance, settings)

    assert deleted >= 1 and kept >= 2  # the first fleet run and the rates run stay
    assert instance.get_run_by_id(quiet_run) is None
    assert all(instance.get_run_by_id(o.run_id) is not None for o in first)
    assert _latest(instance) == before

    # The stores change: the new run holds the latest events of what it wrote; the first
    # keeps the tables it alone still holds the latest of.
    advance_demo(settings, registry, demo_account, days=1)
    sync_stores(settings, registry)
    after_change = _latest(instance)
    _prune(instance, settings)
    assert _latest(instance) == after_change
    runs = {r.run_id for r in instance.get_runs()}
    held = runs_holding_latest_events(
        instance,
        defs.get_repository_def().asset_graph.get_all_asset_keys(),
        list(defs.get_repository_def().asset_graph.asset_check_keys),
    )
    assert runs == held
    # A deleted run's values went with it.
    assert {key.split("/", 1)[0] for key in run_files(settings).keys("")} <= runs
