"""Measurements of the work done outside the API (syncs, exports, the lake's write lock),
for its /metrics: what they are, and a process's tally of them until it is written down.

Syncs and exports run in Dagster's processes, on any worker host, while /metrics is served
by the API: each process adds its figures here (in memory, thread-safe), and
registry.measures adds them to counters in the registry (the one store every role shares)
at the end of each step or job; the API reads those counters at each scrape (api.metrics).
A figure a process had not written when it died is lost, as a Prometheus client's would be.

Labels are bounded by design: never a job or run id; a store's id only while the
deployment has at most QUARRY_METRICS_MAX_STORES stores, past that its account's id only
(registry.measures.store_labels).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

COUNTER = "counter"
HISTOGRAM = "histogram"
# Seconds: from a fast lock to an hour-long backfill step.
DURATION_BUCKETS: tuple[float, ...] = (
    0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600,
)  # fmt: skip
LOCK_BUCKETS: tuple[float, ...] = (0.001, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 600)


@dataclass(frozen=True)
class Definition:
    name: str
    kind: str  # COUNTER or HISTOGRAM
    help: str
    labels: tuple[str, ...]
    buckets: tuple[float, ...] = ()


STORE_LABELS = ("account_id", "store_id")
DEFINITIONS: dict[str, Definition] = {
    d.name: d
    for d in (
        Definition(
            "quarry_sync_duration_seconds",
            HISTOGRAM,
            "Time a sync step took to read a dataset from its platform and write it.",
            (*STORE_LABELS, "dataset"),
            DURATION_BUCKETS,
        ),
        Definition(
            "quarry_sync_rows",
            COUNTER,
            "Rows a sync wrote, by dataset (its tables together).",
            (*STORE_LABELS, "dataset"),
        ),
        Definition(
            "quarry_export_duration_seconds",
            HISTOGRAM,
            "Time an export job took from its claim to its end, by format and destination.",
            ("format", "destination", "status"),
            DURATION_BUCKETS,
        ),
        Definition(
            "quarry_failures",
            COUNTER,
            "Failed work by kind: sync (a step raised), sync_incomplete (a window did not "
            "match the platform's count), export, export_delivery (the file was made, the "
            "destination refused it).",
            ("kind",),
        ),
        Definition(
            "quarry_lake_write_lock_wait_seconds",
            HISTOGRAM,
            "Time a writer waited for the lake's write lock.",
            (),
            LOCK_BUCKETS,
        ),
    )
}
# One series: a metric's name (with _bucket, _sum or _count for a histogram's parts) and
# its labels in a fixed order.
SeriesKey = tuple[str, tuple[tuple[str, str], ...]]


class Tally:
    """A process's figures not yet written down: series -> amount to add."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: dict[SeriesKey, float] = {}

    def count(self, name: str, labels: Mapping[str, str], amount: float = 1.0) -> None:
        definition = _definition(name, COUNTER, labels)
        self._add(
            [((definition.name + "_total", _ordered(definition, labels)), amount)],
        )

    def observe(self, name: str, labels: Mapping[str, str], value: float) -> None:
        definition = _definition(name, HISTOGRAM, labels)
        pairs = _ordered(definition, labels)
        parts: list[tuple[SeriesKey, float]] = [
            ((name + "_count", pairs), 1.0),
            ((name + "_sum", pairs), value),
        ]
        for bound in (*definition.buckets, float("inf")):
            if value <= bound:
                parts.append(((name + "_bucket", (*pairs, ("le", _le(bound)))), 1.0))
        self._add(parts)

    def drain(self) -> dict[SeriesKey, float]:
        """Everything tallied since the last drain (and forgets it)."""
        with self._lock:
            pending, self._pending = self._pending, {}
        return pending

    def restore(self, pending: Mapping[SeriesKey, float]) -> None:
        """Puts back what a drain took and could not write (the next write retries it)."""
        self._add(list(pending.items()))

    def _add(self, parts: Sequence[tuple[SeriesKey, float]]) -> None:
        with self._lock:
            for key, amount in parts:
                self._pending[key] = self._pending.get(key, 0.0) + amount


def _definition(name: str, kind: str, labels: Mapping[str, str]) -> Definition:
    definition = DEFINITIONS[name]
    if definition.kind != kind or set(labels) != set(definition.labels):
        raise ValueError(f"{name} is a {definition.kind} with labels {definition.labels}")
    return definition


def _ordered(definition: Definition, labels: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple((name, str(labels[name])) for name in definition.labels)


def _le(bound: float) -> str:
    return "+Inf" if bound == float("inf") else repr(float(bound))


# The process's tally: everything in it adds here.
TALLY = Tally()
