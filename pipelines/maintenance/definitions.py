"""Everything warehouse maintenance contributes to the code location."""

from __future__ import annotations

from dagster import Definitions

from pipelines.maintenance.jobs import (
    dagster_run_retention,
    rebuild_rollups_job,
    warehouse_maintenance,
)
from pipelines.maintenance.schedules import SCHEDULES

defs = Definitions(
    jobs=[warehouse_maintenance, dagster_run_retention, rebuild_rollups_job],
    schedules=SCHEDULES,
)
