"""The run config and tags of a fleet run, from the settings of whoever starts it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pipelines.fleet.batches import STORES_PER_BATCH
from pipelines.fleet.executor import execution_config
from pipelines.run_logger import LOGGERS_CONFIG
from quarry.settings import Settings

# Tag of every fleet run: what started it (tick, first-sync, cli).
FLEET_TAG = "quarry/fleet"


def fleet_run_config(
    settings: Settings,
    store_ids: Sequence[str] | None = None,
    *,
    in_process: bool = False,
    stores_per_batch: int = STORES_PER_BATCH,
) -> dict[str, Any]:
    """Probe `store_ids` (every store when None); steps of at most `stores_per_batch` stores
    on the executor the settings name, or in this process when `in_process`."""
    wanted = None if store_ids is None else list(store_ids)
    probe = {"store_ids": wanted, "stores_per_batch": stores_per_batch}
    execution = {"config": {"in_process": {}}} if in_process else execution_config(settings)
    return {**LOGGERS_CONFIG, "ops": {"probe_fleet": {"config": probe}}, "execution": execution}
