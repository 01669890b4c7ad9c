"""Writers in separate processes at once: two stores' incremental syncs and a third store's
full re-syncs all complete, with nothing lost or doubled, while a reader in a fourth
process never fails and never sees half a sync. On a SQLite catalog (the lake's file lock)
and on PostgreSQL (an advisory lock that holds across hosts)."""

from __future__ import annotations

import multiprocessing
from pathlib import Path
from typing import Any

import pytest

from quarry.settings import Settings
from registry.accounts import create_store
from registry.db import Registry
from registry.models import Store
from tests.warehouse.conftest import add_stores, current_rows, orders_page, publish
from warehouse.lake import Lake
from warehouse.reader import WarehouseReader
from warehouse.writer import StoreWriter

INCREMENTAL_PAGES = 8
RESYNCS = 2
RESYNC_PAGES = 4
PAGE_ORDERS = 1500


def _settings(home: str, catalog_url: str | None) -> Settings:
    return Settings(home=Path(home), catalog_url=catalog_url)


def incremental(lake: Lake, registry: Registry, store: str) -> None:
    """Page k rewrites orders 0..49 of `store` (tag vk, two lines each) and publishes."""
    for version in range(1, INCREMENTAL_PAGES + 1):
        page = orders_page(store, range(50), version)
        StoreWriter(lake, store).apply(page, full=False, first=False)
        publish(lake, registry, store)


def resync(lake: Lake, registry: Registry, store: str) -> None:
    """Full re-syncs of `store`, each in several pages, published once complete."""
    for run in range(RESYNCS):
        writer = StoreWriter(lake, store)
        for index in range(RESYNC_PAGES):
            numbers = range(index * PAGE_ORDERS, (index + 1) * PAGE_ORDERS)
            writer.apply(orders_page(store, numbers, run), full=True, first=index == 0)
        publish(lake, registry, store)


def write(home: str, catalog_url: str | None, store: str, job: Any, errors: Any) -> None:
    """A writer process: `job(lake, registry, store)`, its failure reported to the test."""
    settings = _settings(home, catalog_url)
    lake, registry = Lake(settings), Registry(settings, run_migrations=False)
    try:
        job(lake, registry, store)
    except Exception as exc:  # every failure is a finding, reported to the test
        errors.put(f"{store}: {exc!r}")
    finally:
        lake.close()
        registry.dispose()


CHECK = """
SELECT store_id, count(*), list(DISTINCT tags),
       (SELECT count(*) FROM order_lines l WHERE l.store_id = o.store_id)
FROM orders o GROUP BY store_id
"""


def read(home: str, catalog_url: str | None, stop: Any, errors: Any, reads: Any) -> None:
    """Read every store's published snapshot until stopped: whole syncs only."""
    settings = _settings(home, catalog_url)
    registry = Registry(settings, run_migrations=False)
    reader = WarehouseReader(settings, registry)
    count = 0
    try:
        while not stop.is_set():
            with reader.read(["st_a", "st_b", "st_c"]) as cursor:
                for store, orders, tags, lines in cursor.execute(CHECK).fetchall():
                    whole = (50 if store != "st_c" else RESYNC_PAGES * PAGE_ORDERS) == orders
                    if len(tags) != 1 or not whole or lines != 2 * orders:
                        errors.put(f"reader saw {store}: {orders=} {tags=} {lines=}")
            count += 1
    except Exception as exc:  # every failure is a finding, reported to the test
        errors.put(f"reader: {exc!r}")
    finally:
        reads.put(count)
        reader.close()
        registry.dispose()


@pytest.mark.parametrize(
    "catalog", ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]
)
def test_two_syncs_and_a_full_resync_at_once(
    catalog: str, quarry_env: Settings, request: pytest.FixtureRequest
) -> None:
    catalog_url = request.getfixturevalue("postgres_url") if catalog == "postgresql" else None
    settings = _settings(str(quarry_env.home), catalog_url)
    registry = Registry(settings)
    add_stores(registry)
    with registry.session() as session:
        account = session.get(Store, "st_a").account_id  # type: ignore[union-attr]
        create_store(session, account_id=account, name="st_c", domain="st_c.example",
                     currency="USD", timezone="UTC", platform="demo", store_id="st_c")  # fmt: skip
    lake = Lake(settings)
    # Every store starts with one published sync, so the reader has something to check.
    for store in ("st_a", "st_b"):
        StoreWriter(lake, store).apply(orders_page(store, range(50)), full=True, first=True)
    resync_pages = [orders_page("st_c", range(RESYNC_PAGES * PAGE_ORDERS), 9)]
    StoreWriter(lake, "st_c").apply(resync_pages[0], full=True, first=True)
    publish(lake, registry, "st_a", "st_b", "st_c")

    context = multiprocessing.get_context("spawn")
    errors, reads, stop = context.Queue(), context.Queue(), context.Event()
    home = str(quarry_env.home)
    writers = [
        context.Process(target=write, args=(home, catalog_url, store, job, errors))
        for store, job in (("st_a", incremental), ("st_b", incremental), ("st_c", resync))
    ]
    reader = context.Process(target=read, args=(home, catalog_url, stop, errors, reads))
    reader.start()
    for process in writers:
        process.start()
    for process in writers:
        process.join(timeout=240)
    stop.set()
    reader.join(timeout=60)
    for process in [*writers, reader]:
        if process.is_alive():
            process.kill()

    found = []
    while not errors.empty():
        found.append(errors.get())
    assert found == []
    assert [p.exitcode for p in writers] == [0, 0, 0]
    assert reads.get(timeout=5) > 0
    for store in ("st_a", "st_b"):
        orders = current_rows(lake, "orders", store)
        assert sorted(r["id"] for r in orders) == sorted(f"{store}-o{n}" for n in range(50))
        assert {r["tags"] for r in orders} == {f"v{INCREMENTAL_PAGES}"}
        assert len(current_rows(lake, "order_lines", store)) == 100
    orders = current_rows(lake, "orders", "st_c")
    assert len(orders) == len({r["id"] for r in orders}) == RESYNC_PAGES * PAGE_ORDERS
    assert {r["tags"] for r in orders} == {f"v{RESYNCS - 1}"}
    assert len(current_rows(lake, "order_lines", "st_c")) == 2 * RESYNC_PAGES * PAGE_ORDERS
    lake.close()
    registry.dispose()
