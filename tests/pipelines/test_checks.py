"""Asset checks: they pass on a good sync; a duplicated id fails valid_keys, which blocks the
snapshot, so readers keep the previous one."""

from __future__ import annotations

import pytest
from dagster import AssetCheckEvaluation, AssetKey, DagsterEventType, DagsterInstance

from cli.demo_account import advance_demo
from pipelines.runner import sync_stores
from quarry.settings import Settings
from registry.accounts import get_store
from registry.db import Registry
from tests.pipelines.helpers import warehouse_rows
from warehouse.lake import Lake
from warehouse.snapshots import latest_snapshots

pytestmark = pytest.mark.slow


def _evaluations(
    instance: DagsterInstance, run_id: str
) -> dict[tuple[str, str], AssetCheckEvaluation]:
    records = instance.all_logs(run_id, of_type=DagsterEventType.ASSET_CHECK_EVALUATION)
    results = {}
    for record in records:
        evaluation = record.get_dagster_event().event_specific_data
        assert isinstance(evaluation, AssetCheckEvaluation)
        results[(evaluation.asset_key.to_user_string(), evaluation.check_name)] = evaluation
    return results


def _passed(instance: DagsterInstance, run_id: str) -> dict[tuple[str, str], bool]:
    return {key: e.passed for key, e in _evaluations(instance, run_id).items()}


def test_checks_pass_then_catch_a_duplicated_id(
    settings: Settings,
    registry: Registry,
    instance: DagsterInstance,
    demo_account: str,
    store_ids: list[str],
) -> None:
    store_id = store_ids[0]
    [rates, good] = sync_stores(settings, registry, [store_id])
    assert good.success
    # The fleet run logs one check per store, `synced`, with every table check's outcome
    # and figures: valid_keys of 9 tables, matches_platform and complete of the 4 parent
    # tables; a table's own check only when it fails or warns (QUARRY_FLEET_TABLE_CHECKS).
    evaluations = _evaluations(instance, good.run_id)
    assert list(evaluations) == [("warehouse_snapshot", "synced")]
    synced = evaluations[("warehouse_snapshot", "synced")]
    assert synced.passed is True and synced.partition == store_id
    checks = synced.metadata["checks"].value
    assert isinstance(checks, dict) and len(checks) == 9 + 4 + 4
    assert all(c["passed"] for c in checks.values())
    assert checks["orders.matches_platform"]["platform_records"] > 0
    assert (
        checks["orders.matches_platform"]["warehouse_rows"]
        == (checks["orders.matches_platform"]["platform_records"])
    )
    assert "order_lines.valid_keys" in checks and "sales.valid_keys" in checks
    assert all(_passed(instance, rates.run_id).values())
    # The UI can tell stores apart in the fleet run: each check result is the store's own
    # (its partition), named in its metadata.
    with registry.session() as session:
        name = get_store(session, store_id).name
    run = instance.get_run_by_id(good.run_id)
    assert run is not None and run.job_name == "sync_fleet"
    assert synced.metadata["store"].value == f"{name} ({store_id})"
    materialization = instance.get_latest_materialization_event(AssetKey("orders"))
    assert materialization is not None and materialization.asset_materialization is not None
    assert materialization.asset_materialization.partition == store_id
    assert materialization.asset_materialization.metadata["store"].value == f"{name} ({store_id})"

    with registry.session() as session:
        before = latest_snapshots(session, [store_id])
    orders = warehouse_rows(settings, "orders", store_id)
    # A duplicate written behind the writer's back, as a broken tool would.
    lake = Lake(settings)
    cursor = lake.cursor()
    cursor.register("duplicate", orders.slice(0, 1))
    cursor.execute("INSERT INTO lake.orders SELECT * FROM duplicate")
    cursor.close()
    lake.close()

    # A store whose platform has nothing new costs a probe, no checks: the fleet syncs it
    # when it next changes, and its checks then look at every row written since its
    # published snapshot, the duplicate among them.
    [unchanged] = sync_stores(settings, registry, [store_id])
    assert unchanged.success and not unchanged.rows
    advance_demo(settings, registry, demo_account, days=1)
    [bad] = sync_stores(settings, registry, [store_id])
    # It failed in the fleet run, and again in a run of its own, which is what it reports.
    assert not bad.success and bad.failed_step == "check_orders"
    run = instance.get_run_by_id(bad.run_id)
    assert run is not None and run.job_name == "sync_stores"
    keys = _evaluations(instance, bad.run_id)[("orders", "valid_keys")]
    assert keys.passed is False
    # Figures carry the store in their label: the UI plots each store's on its own.
    label = f"{name} ({store_id})"
    assert keys.metadata[f"duplicate_keys · {label}"].value == 1
    assert keys.metadata[f"rows_with_null_keys · {label}"].value == 0
    with registry.session() as session:
        assert latest_snapshots(session, [store_id]) == before
