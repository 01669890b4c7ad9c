"""What every measuring section shares: the dataset, one warehouse snapshot opened in this
process (the floors run on it), and an HTTP client holding the run's key."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from bench.dataset import Dataset
from bench.stats import Timings
from warehouse.reader import Snapshot, WarehouseReader


@dataclass
class BenchContext:
    dataset: Dataset
    reader: WarehouseReader
    snapshot: Snapshot
    api_url: str
    key: str
    repeats: int
    load_seconds: float
    quick: bool
    xlsx: bool = True

    def client(self) -> httpx.Client:
        """A keep-alive client for the API, as a real client would hold one."""
        return httpx.Client(
            base_url=self.api_url,
            headers={"Authorization": f"Bearer {self.key}"},
            timeout=httpx.Timeout(600.0),
        )


def timed(operation: Callable[[], Any], repeats: int, warmup: int = 1) -> tuple[Timings, Any]:
    """Run `operation` `warmup` times untimed (caches, first plans), then `repeats` times;
    the timings and the last result."""
    result = None
    for _ in range(warmup):
        result = operation()
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        result = operation()
        samples.append(time.perf_counter() - started)
    return Timings.of_seconds(samples), result


def first_call_ms(operation: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    result = operation()
    return (time.perf_counter() - started) * 1000.0, result
