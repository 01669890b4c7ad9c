"""Everything the fleet contributes to the code location."""

from __future__ import annotations

from dagster import Definitions

from pipelines.fleet.io import RunFilesIOManager
from pipelines.fleet.jobs import sync_fleet
from pipelines.fleet.progress import FleetProgress
from pipelines.fleet.schedules import SCHEDULES
from pipelines.fleet.sensors import SENSORS
from pipelines.fleet.store_sensors import SENSORS as STORE_SENSORS

defs = Definitions(
    jobs=[sync_fleet],
    schedules=SCHEDULES,
    sensors=[*SENSORS, *STORE_SENSORS],
    resources={
        "run_files": RunFilesIOManager(),
        # Nobody listens unless the run's caller passes its own (pipelines.runner).
        "fleet_progress": FleetProgress(),
    },
)
