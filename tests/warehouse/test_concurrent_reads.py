"""Readers in other processes, reading while this one writes and publishes snapshots, see
no errors and only whole snapshots.

Sync k rewrites every order of st_a and its two lines with version k and adds one order,
so in any snapshot: lines = 2 x orders, every order and line carries one same version k,
and there are 10 + k orders. A reader that mixed two syncs would break one of these.
"""

from __future__ import annotations

import multiprocessing
import time
from multiprocessing.synchronize import Event
from pathlib import Path
from queue import Empty
from typing import Any

from quarry.settings import Settings
from registry.db import Registry
from tests.warehouse.conftest import orders_page, publish
from warehouse.lake import Lake
from warehouse.reader import WarehouseReader
from warehouse.writer import StoreWriter

READERS = 2
SYNCS = 6
CHECK = """
SELECT
    (SELECT count(*) FROM orders WHERE store_id = 'st_a'),
    (SELECT count(*) FROM order_lines WHERE store_id = 'st_a'),
    (SELECT list(DISTINCT tags) FROM orders WHERE store_id = 'st_a'),
    (SELECT list(DISTINCT sku) FROM order_lines WHERE store_id = 'st_a'),
    (SELECT count(*) FROM orders WHERE store_id = 'st_b')
"""


def read_until_stopped(home: str, ready: Event, stop: Event, results: Any) -> None:
    """A reader process: check every snapshot it reads, until told to stop."""
    settings = Settings(home=Path(home))
    registry = Registry(settings, run_migrations=False)
    reader = WarehouseReader(settings, registry)
    reads, problems, versions = 0, [], set()
    try:
        while not stop.is_set():
            try:
                with reader.read(["st_a", "st_b"]) as cursor:
                    orders, lines, tags, skus, other = cursor.execute(CHECK).fetchone()
            except Exception as exc:  # every failure is a finding, reported to the test
                problems.append(f"error: {exc!r}")
                continue
            reads += 1
            ready.set()
            version = int(tags[0][1:]) if len(tags) == 1 else -1
            versions.add(version)
            if not (tags == skus and version >= 0 and orders == 10 + version):
                problems.append(f"mixed: {orders=} {lines=} {tags=} {skus=}")
            elif lines != 2 * orders or other != 3:
                problems.append(f"counts: {orders=} {lines=} {other=}")
    finally:
        results.put({"reads": reads, "problems": problems[:5], "versions": sorted(versions)})
        reader.close()
        registry.dispose()


def _sync(lake: Lake, registry: Registry, version: int) -> None:
    page = orders_page("st_a", range(10 + version), version)
    StoreWriter(lake, "st_a").apply(page, full=version == 0, first=version == 0)
    publish(lake, registry, "st_a")


def test_readers_in_other_processes_see_whole_snapshots(
    quarry_env: Settings, lake: Lake, registry: Registry
) -> None:
    _sync(lake, registry, 0)
    StoreWriter(lake, "st_b").apply(orders_page("st_b", [1, 2, 3]), full=True, first=True)
    publish(lake, registry, "st_b")

    # DuckDB must not be forked once it is in use: spawn.
    context = multiprocessing.get_context("spawn")
    ready, stop, results = context.Event(), context.Event(), context.Queue()
    readers = [
        context.Process(
            target=read_until_stopped, args=(str(quarry_env.home), ready, stop, results)
        )
        for _ in range(READERS)
    ]
    for process in readers:
        process.start()
    try:
        assert ready.wait(timeout=60), "no reader process got going"
        for version in range(1, SYNCS + 1):
            _sync(lake, registry, version)
        time.sleep(0.2)
    finally:
        stop.set()
        reports = []
        for _ in readers:
            try:
                reports.append(results.get(timeout=30))
            except Empty:
                break
        for process in readers:
            process.join(timeout=10)
            if process.is_alive():
                process.kill()

    assert len(reports) == READERS
    assert [r["problems"] for r in reports] == [[]] * READERS
    assert all(r["reads"] > 0 for r in reports)
    seen = set().union(*(r["versions"] for r in reports))
    assert len(seen) > 1, f"readers saw only versions {seen}: no read overlapped a sync"
