"""Everything the sync contributes to the code location."""

from __future__ import annotations

from dagster import Definitions

from pipelines.sync.assets import SOURCE_ASSETS, exchange_rates, sales, warehouse_snapshot
from pipelines.sync.checks import TABLE_CHECKS
from pipelines.sync.jobs import JOBS
from pipelines.sync.schedules import SCHEDULES

defs = Definitions(
    assets=[*SOURCE_ASSETS, sales, exchange_rates, warehouse_snapshot],
    asset_checks=TABLE_CHECKS,
    jobs=JOBS,
    schedules=SCHEDULES,
)
