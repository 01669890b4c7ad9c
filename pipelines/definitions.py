"""The code location `pipelines.definitions`: every folder's Definitions, merged here with
the resources they share. Importing it reads no setting (the resources do when built)."""

from __future__ import annotations

from dagster import Definitions, in_process_executor

from pipelines.exports.definitions import defs as export_defs
from pipelines.resources import QuarryResource, ResyncStatus
from pipelines.sync.definitions import defs as sync_defs

defs = Definitions.merge(
    sync_defs,
    export_defs,
    Definitions(
        resources={"quarry": QuarryResource(), "resync_status": ResyncStatus()},
        # One process per run: steps share it (2 cores; deltalake must not be forked).
        executor=in_process_executor,
    ),
)
