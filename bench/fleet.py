"""Fleet figures: many small stores (demo accounts of up to 50 stores of about 200 orders
each), synced as `quarry sync` syncs them (one fleet run in this process: a probe of every
store, then the stores with changes in batches).

Measured, each with wall time, CPU seconds of this process and its peak RSS: the first sync
of every store; a tick with nothing changed; a tick after `quarry demo advance` by one day on
every account (every store has a few changes). Beside them, the floors: the platform probes
alone (of a no-change tick), and the same rows written into a scratch lake in one
transaction (of the first sync and the changed tick: the rows each inserted, read out
beforehand and written with one INSERT per table, sorted as the lake's tables are); and the
time the ticks waited for the lake's write lock. Seeding and advancing the demo data are not
part of any figure.
"""

from __future__ import annotations

import math
import os
import resource
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy.engine import make_url

from bench.stats import Figure, Section, Target, at_most_value
from cli.demo_account import advance_demo, seed_demo
from pipelines.fleet.probe import probe_stores
from pipelines.runner import sync_stores
from quarry.settings import Settings, load_settings
from registry.db import Registry
from registry.measures import read_series
from warehouse.lake import Lake, shared_lake
from warehouse.schemas import TABLES
from warehouse.tables import quote_identifier, sort_key

STORES_PER_ACCOUNT = 50  # the demo's own limit
ORDERS_PER_STORE = 200
# The targets, for 1,000 stores (docs/benchmark.md, "Fleet").
TARGET_STORES = 1_000
NO_CHANGE_SECONDS = 60.0
NO_CHANGE_CPU_PER_STORE = 0.03
CHANGED_TICK_SECONDS = 300.0
FIRST_SYNC_SECONDS = 300.0
PEAK_RSS_MB = 1024.0
LOCK_WAIT = "quarry_lake_write_lock_wait_seconds_sum"


@dataclass(frozen=True)
class Measured:
    wall: float
    cpu: float
    peak_rss_mb: float
    lock_wait: float
    stores: int
    synced: int


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _lock_wait(registry: Registry) -> float:
    with registry.session() as session:
        return sum(v for name, _labels, v in read_series(session) if name == LOCK_WAIT)


def _timed(settings: Settings, registry: Registry, work: Callable[[], Any]) -> Measured:
    waited, cpu, started = _lock_wait(registry), _cpu(), time.perf_counter()
    outcomes = work()
    wall = time.perf_counter() - started
    stores = [o for o in outcomes if o.label != "exchange_rates"]
    failed = [o for o in stores if not o.success]
    if failed:
        raise RuntimeError("; ".join(f"{o.label}: {o.error}" for o in failed[:5]))
    return Measured(
        wall=wall,
        cpu=_cpu() - cpu,
        peak_rss_mb=_peak_rss_mb(),
        lock_wait=_lock_wait(registry) - waited,
        stores=len(stores),
        synced=sum(1 for o in stores if any(o.rows.values())),
    )


# Setting -> (database name suffix, URL scheme) of the fleet's shared state on PostgreSQL.
SHARED_STATE = {
    "QUARRY_DATABASE_URL": ("registry", "postgresql+psycopg://"),
    "QUARRY_CATALOG_URL": ("catalog", "postgresql://"),
    "QUARRY_DAGSTER_POSTGRES_URL": ("dagster", "postgresql://"),
}


def fresh_database(server: str, name: str) -> str:
    """Drop and create database `name` on the PostgreSQL server of libpq URL `server`;
    the new database's URL."""
    import psycopg

    url = make_url(server.replace("postgresql://", "postgresql+psycopg://", 1))
    with psycopg.connect(
        url.set(drivername="postgresql").render_as_string(False), autocommit=True
    ) as con:
        con.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        con.execute(f'CREATE DATABASE "{name}"')
    return url.set(drivername="postgresql", database=name).render_as_string(False)


def seed_fleet(settings: Settings, registry: Registry, stores: int) -> list[str]:
    """Demo accounts holding `stores` stores in all; their ids."""
    accounts = []
    for index in range(math.ceil(stores / STORES_PER_ACCOUNT)):
        count = min(STORES_PER_ACCOUNT, stores - index * STORES_PER_ACCOUNT)
        accounts.append(
            seed_demo(settings, registry, orders=count * ORDERS_PER_STORE, stores=count, seed=index)
        )
    return accounts


def run_section(
    section: Section,
    home: Path,
    stores: int,
    say: Callable[[str], None],
    *,
    postgres: str | None = None,
) -> None:
    """Seed a fleet of `stores` stores in a fresh `home` and measure it into `section`.
    `postgres`: a PostgreSQL server (libpq URL of any database on it) for the fleet's shared
    state as docs/deployment.md deploys it (the registry, the lake's catalog and Dagster's
    storage, each in a database the bench makes there). Without it, everything but the
    data is in the home's SQLite files, as the demo keeps it."""
    shutil.rmtree(home, ignore_errors=True)
    # The runs' resources read the environment: it names the fleet's home while it is measured.
    names = ("QUARRY_HOME", "DAGSTER_HOME", *SHARED_STATE)
    saved = {name: os.environ.get(name) for name in names}
    os.environ.update(QUARRY_HOME=str(home), DAGSTER_HOME=str(home / "dagster"))
    if postgres:
        for variable, (database, driver) in SHARED_STATE.items():
            url = fresh_database(postgres, f"quarry_bench_fleet_{stores}_{database}")
            os.environ[variable] = url.replace("postgresql://", driver, 1)
    settings = load_settings()
    registry = Registry(settings)
    try:
        say(f"fleet {stores}: seeding {math.ceil(stores / STORES_PER_ACCOUNT)} accounts")
        accounts = seed_fleet(settings, registry, stores)
        say(f"fleet {stores}: first sync of every store")
        first = _timed(settings, registry, lambda: sync_stores(settings, registry))
        say(f"fleet {stores}: a tick with nothing changed")
        quiet = _timed(settings, registry, lambda: sync_stores(settings, registry))
        lake = shared_lake(settings)
        before_change = lake.version()
        started, cpu = time.perf_counter(), _cpu()
        probes = probe_stores(settings, registry, lake)
        probe_wall, probe_cpu = time.perf_counter() - started, _cpu() - cpu
        assert not any(p.needs_sync for p in probes), "a store changed with nobody changing it"
        say(f"fleet {stores}: advancing every account by a day (not measured)")
        for account in accounts:
            advance_demo(settings, registry, account, days=1)
        say(f"fleet {stores}: a tick after one demo day")
        changed = _timed(settings, registry, lambda: sync_stores(settings, registry))
        # After every measured tick: the floors' rows would otherwise count in their RSS.
        say(f"fleet {stores}: the same rows written in one transaction (floors)")
        first_floor = write_floor(lake, home / "floor-first", 0, before_change)
        changed_floor = write_floor(lake, home / "floor-changed", before_change, lake.version())
    finally:
        registry.dispose()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    _add(section, stores, "first_sync", "first sync of every store", first, FIRST_SYNC_SECONDS,
         floor=first_floor, floor_is="the same rows written in one transaction")  # fmt: skip
    _add(section, stores, "no_change_tick", "tick, nothing changed", quiet, NO_CHANGE_SECONDS,
         floor=probe_wall, floor_is="the platform probes alone")  # fmt: skip
    section.add(
        Figure(
            f"fleet.{stores}.no_change_cpu_per_store",
            f"{stores:,} stores: CPU per store of a tick with nothing changed",
            "s",
            quiet.cpu / max(1, quiet.stores),
            probe_cpu / max(1, quiet.stores),
            at_most_value(NO_CHANGE_CPU_PER_STORE, "s"),
            note="floor: the platform probes alone",
        )
    )
    _add(section, stores, "changed_tick", "tick after one demo day", changed, CHANGED_TICK_SECONDS,
         floor=changed_floor, floor_is="the same rows written in one transaction")  # fmt: skip


def _add(
    section: Section,
    stores: int,
    key: str,
    label: str,
    measured: Measured,
    limit_at_target: float,
    *,
    floor: float | None = None,
    floor_is: str = "",
) -> None:
    # The wall targets are for 1,000 stores: other sizes are reported beside them.
    target: Target | None = at_most_value(limit_at_target, "s") if stores == TARGET_STORES else None
    section.add(
        Figure(
            f"fleet.{stores}.{key}_seconds",
            f"{stores:,} stores: {label}",
            "s",
            measured.wall,
            floor,
            target,
            note=f"{measured.synced} stores wrote rows; floor: {floor_is}"
            if floor is not None
            else f"{measured.synced} stores wrote rows",
            detail={
                "cpu_seconds": round(measured.cpu, 2),
                "cpu_per_store": round(measured.cpu / max(1, measured.stores), 4),
                "peak_rss_mb": round(measured.peak_rss_mb, 1),
                "lock_wait_seconds": round(measured.lock_wait, 2),
                "lock_wait_share": round(measured.lock_wait / measured.wall, 3)
                if measured.wall
                else 0.0,
            },
        )
    )
    section.add(
        Figure(
            f"fleet.{stores}.{key}_peak_rss_mb",
            f"{stores:,} stores: peak RSS after the {label}",
            "MB",
            measured.peak_rss_mb,
            None,
            at_most_value(PEAK_RSS_MB, "MB"),
        )
    )


_FLOOR_LAKE = "quarry_floor"


def write_floor(lake: Lake, scratch: Path, after: int, until: int) -> float:
    """Seconds to write, in one transaction into a new lake in `scratch` (a DuckDB-file
    catalog), the rows of every table that commits after lake version `after` up to
    `until` inserted and that are live at `until`: the floor of the tick that wrote them.
    The rows are read into temporary tables first, outside the time."""
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    cursor = lake.connection.cursor()
    try:
        cursor.execute(
            f"ATTACH 'ducklake:{scratch / 'catalog.ducklake'}' AS {_FLOOR_LAKE} "
            f"(DATA_PATH '{scratch / 'data'}/')"
        )
        names = []
        for name, spec in TABLES.items():
            if not spec.per_store:
                continue
            table = quote_identifier(name)
            cursor.execute(
                f"CREATE TEMP TABLE floor_{name} AS SELECT * FROM lake.{table} "
                f"AT (VERSION => {int(until)}) WHERE snapshot_id > {int(after)}"
            )
            cursor.execute(f"CREATE TABLE {_FLOOR_LAKE}.{table} AS FROM floor_{name} LIMIT 0")
            order = ", ".join(quote_identifier(c) for c in sort_key(name))
            cursor.execute(f"ALTER TABLE {_FLOOR_LAKE}.{table} SET SORTED BY ({order})")
            names.append(name)
        started = time.perf_counter()
        cursor.execute("BEGIN")
        for name in names:
            table = quote_identifier(name)
            cursor.execute(f"INSERT INTO {_FLOOR_LAKE}.{table} FROM floor_{name}")
        cursor.execute("COMMIT")
        return time.perf_counter() - started
    finally:
        for name in TABLES:
            cursor.execute(f"DROP TABLE IF EXISTS floor_{name}")
        cursor.execute(f"DETACH DATABASE IF EXISTS {_FLOOR_LAKE}")
        cursor.close()
        shutil.rmtree(scratch, ignore_errors=True)
