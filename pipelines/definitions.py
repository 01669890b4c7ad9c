"""The code location `pipelines.definitions`: every folder's Definitions, merged here with
the resources they share. Importing it reads no setting (the resources do when built)."""

from __future__ import annotations

import warnings

from dagster import BetaWarning, Definitions, in_process_executor

from pipelines.exports.definitions import defs as export_defs
from pipelines.fleet.definitions import defs as fleet_defs
from pipelines.maintenance.definitions import defs as maintenance_defs
from pipelines.resources import QuarryResource, ResyncStatus
from pipelines.run_logger import quarry_console_logger
from pipelines.sync.definitions import defs as sync_defs

# Dagster 1.13 copies every sensor that targets a job when it attaches resources, and the
# copy passes `owners` (None here) on to SensorDefinition, which warns that the parameter is
# in beta: twice on every code server start, in the terminal of `make demo`. No sensor of
# ours sets owners.
warnings.filterwarnings(
    "ignore",
    message="Parameter `owners` of initializer `SensorDefinition.__init__`",
    category=BetaWarning,
)

defs = Definitions.merge(
    sync_defs,
    fleet_defs,
    export_defs,
    maintenance_defs,
    Definitions(
        resources={"quarry": QuarryResource(), "resync_status": ResyncStatus()},
        # Every job's console logger (Dagster's own prints each event at DEBUG).
        loggers={"console": quarry_console_logger},
        # One process per run: steps share it (2 cores).
        executor=in_process_executor,
    ),
)
