"""A sync step's figures for /metrics (quarry.measures): its time and rows per dataset,
and its failures by kind, written to the registry as the step ends."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from platforms.base import IncompleteSync
from quarry.measures import TALLY
from registry.db import Registry
from registry.measures import store_labels, write_tally


@dataclass
class StepFigures:
    rows: int = 0


@contextmanager
def measured_step(
    registry: Registry, store_id: str, dataset: str, max_stores: int, *, write: bool = True
) -> Iterator[StepFigures]:
    """Times the block; set `rows` on what it yields. A raised IncompleteSync counts as a
    `sync_incomplete` failure, any other exception as a `sync` one (and goes on). The
    figures are written to the registry when the block ends, unless not `write` (a fleet
    batch writes its stores' figures once, pipelines.fleet.jobs)."""
    figures = StepFigures()
    started = time.perf_counter()
    try:
        yield figures
    except IncompleteSync:
        TALLY.count("quarry_failures", {"kind": "sync_incomplete"})
        raise
    except Exception:
        TALLY.count("quarry_failures", {"kind": "sync"})
        raise
    else:
        labels = {**store_labels(registry, store_id, max_stores), "dataset": dataset}
        TALLY.observe("quarry_sync_duration_seconds", labels, time.perf_counter() - started)
        TALLY.count("quarry_sync_rows", labels, figures.rows)
    finally:
        if write:
            write_tally(registry)
