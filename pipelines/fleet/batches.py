"""Stores with changes, packed into batches: the unit of work of a fleet step.

A step costs Dagster a fixed price (its events, and on Celery a task: 1 to 4.5 s measured),
so a step carries many stores; a store with a large first sync (its backlog of orders) gets
a batch of its own, so that it never holds small stores behind it. Large batches go first:
they start while the small ones fill the other workers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pipelines.fleet.probe import StoreProbe

# A batch holds at most this many stores ...
STORES_PER_BATCH = 50
# ... and at most this many orders of first syncs (a store above it is a batch alone).
BACKLOG_PER_BATCH = 20_000


@dataclass(frozen=True)
class Batch:
    """The stores of one step, and the datasets each must read."""

    stores: tuple[StoreProbe, ...]

    @property
    def backlog(self) -> int:
        return sum(p.backlog for p in self.stores)

    @property
    def key(self) -> str:
        """A mapping key Dagster accepts (letters, digits, underscores)."""
        return self.stores[0].store_id.replace("-", "_")


def plan_batches(
    probes: Sequence[StoreProbe],
    *,
    stores_per_batch: int = STORES_PER_BATCH,
    backlog_per_batch: int = BACKLOG_PER_BATCH,
) -> list[Batch]:
    """The stores that need a sync, in batches; the largest backlog first."""
    batches: list[Batch] = []
    current: list[StoreProbe] = []
    backlog = 0
    for probe in sorted((p for p in probes if p.needs_sync), key=lambda p: -p.backlog):
        full = len(current) >= stores_per_batch or backlog + probe.backlog > backlog_per_batch
        if current and full:
            batches.append(Batch(tuple(current)))
            current, backlog = [], 0
        current.append(probe)
        backlog += probe.backlog
    if current:
        batches.append(Batch(tuple(current)))
    return batches
