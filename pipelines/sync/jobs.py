"""Sync jobs. Both run in process: one process per run, and resources built once per run
(ResyncStatus relies on it to bracket a full re-sync)."""

from __future__ import annotations

from dagster import AssetSelection, define_asset_job, in_process_executor

from pipelines.resources import FULL_TAG
from pipelines.run_logger import LOGGERS_CONFIG
from pipelines.sync.assets import STORE_ASSETS, exchange_rates

_STORE_SELECTION = AssetSelection.assets(*STORE_ASSETS)

sync_stores = define_asset_job(
    "sync_stores",
    selection=_STORE_SELECTION,
    executor_def=in_process_executor,
    config=LOGGERS_CONFIG,
    description="Incremental sync of one store: changes since each dataset's cursor, the "
    "sales of changed orders, checks, then a new snapshot.",
)

full_resync = define_asset_job(
    "full_resync",
    selection=_STORE_SELECTION,
    executor_def=in_process_executor,
    config=LOGGERS_CONFIG,
    tags={FULL_TAG: "true"},
    description="Full re-sync of one store: every dataset from the beginning (cursors "
    "ignored), sales rebuilt; the store shows `syncing` until the run ends.",
)

sync_exchange_rates = define_asset_job(
    "sync_exchange_rates",
    selection=AssetSelection.assets(exchange_rates),
    executor_def=in_process_executor,
    config=LOGGERS_CONFIG,
    description="Daily exchange rates from the configured provider.",
)

JOBS = [sync_stores, full_resync, sync_exchange_rates]
