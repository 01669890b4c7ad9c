"""The benchmark's dataset: a demo account seeded deterministically into its own
QUARRY_HOME, reused by later runs while the seed, the size and the code that generates and
stores it are unchanged (a marker file records them).

The data is the demo platform's (platforms/demo): the same seed and anchor give the same
orders, lines, customers and products; only the store ids, which the registry draws, differ
between fresh datasets.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from quarry.settings import Settings, load_settings
from registry.db import Registry

PROJECT_ROOT = Path(__file__).resolve().parents[1]
MARKER = "bench-dataset.json"
# Fixed, so queries can name absolute dates: orders fall in the two years before it.
ANCHOR = date(2025, 7, 1)
SEED = 1_000_003
ACCOUNT_CURRENCY = "USD"
ACCOUNT_TIMEZONE = "America/New_York"
# Whatever generates, writes or reads the data: a change to any of it makes a new dataset.
CODE_DIRS = ("platforms", "warehouse", "pipelines", "registry")


@dataclass(frozen=True)
class BenchStore:
    id: str
    name: str
    currency: str
    timezone: str


@dataclass
class Dataset:
    """The account every section reads; `seeded_seconds` is None when it was reused."""

    home: Path
    settings: Settings
    registry: Registry
    account_id: str
    stores: list[BenchStore]
    orders: int
    seed: int
    synced: bool
    seeded_seconds: float | None = None

    @property
    def store_ids(self) -> list[str]:
        return [s.id for s in self.stores]

    def store_in(self, currency: str) -> BenchStore | None:
        return next((s for s in self.stores if s.currency == currency), None)

    def mark_synced(self) -> None:
        self.synced = True
        _write_marker(self.home, {**_read_marker(self.home), "synced": True})


def bench_environment(home: Path, dagster_port: int | None = None) -> dict[str, str]:
    """The environment of every bench process (this one and its children): the bench home,
    Dagster's home inside it, no rate limit, and nothing inherited from another home."""
    env = {
        k: v for k, v in os.environ.items() if not k.startswith("QUARRY_") and k != "DAGSTER_HOME"
    }
    env["QUARRY_HOME"] = str(home)
    env["DAGSTER_HOME"] = str(home / "dagster")
    # The benchmark sends thousands of requests with one key.
    env["QUARRY_RATE_LIMIT"] = "off"
    # Query figures measure the engine: a cached answer would measure a dict lookup.
    env["QUARRY_QUERY_CACHE_SECONDS"] = "0"
    if dagster_port is not None:
        env["QUARRY_DAGSTER_URL"] = f"http://127.0.0.1:{dagster_port}"
    # Imports of the project's packages from any working directory (the exports package is
    # not part of the installed distribution).
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(PROJECT_ROOT), os.environ.get("PYTHONPATH", "")) if p
    )
    return env


# Code under CODE_DIRS that only reads what is stored: changing it keeps the dataset.
READ_ONLY_DIRS = {("warehouse", "query")}
READ_ONLY_FILES = {
    "pipelines/code_server.py",
    "pipelines/run_preload.py",
    "warehouse/extensions.py",
    "warehouse/rollups/planner.py",
    "warehouse/rollups/exactness.py",
    "warehouse/reader.py",
    "warehouse/resident.py",
}


def code_version() -> str:
    """A digest of the sources that decide what the dataset holds."""
    digest = hashlib.sha256()
    for folder in CODE_DIRS:
        for path in sorted((PROJECT_ROOT / folder).rglob("*.py")):
            relative = path.relative_to(PROJECT_ROOT)
            if relative.parts[:2] in READ_ONLY_DIRS or relative.as_posix() in READ_ONLY_FILES:
                continue
            digest.update(str(path.relative_to(PROJECT_ROOT)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def open_dataset(home: Path, *, orders: int, stores: int, seed: int, reuse: bool) -> Dataset:
    """The dataset in `home`: reused when `reuse` and its marker matches, else `home` is
    emptied and a new account seeded (not synced: see Dataset.synced)."""
    wanted = {
        "orders": orders,
        "stores": stores,
        "seed": seed,
        "anchor": ANCHOR.isoformat(),
        "code_version": code_version(),
    }
    marker = _read_marker(home)
    if reuse and marker and all(marker.get(k) == v for k, v in wanted.items()):
        settings = load_settings(home=home)
        return _dataset(home, settings, marker["account_id"], orders, seed, bool(marker["synced"]))
    if home.exists():
        shutil.rmtree(home)
    settings = load_settings(home=home)
    settings.ensure_home()
    registry = Registry(settings)
    from cli.demo_account import seed_demo

    started = time.perf_counter()
    account_id = seed_demo(
        settings, registry, orders=orders, stores=stores, seed=seed, anchor=ANCHOR
    )
    seconds = time.perf_counter() - started
    _remove_sample_exports(registry, account_id)
    registry.dispose()
    _write_marker(home, {**wanted, "account_id": account_id, "synced": False})
    dataset = _dataset(home, settings, account_id, orders, seed, False)
    dataset.seeded_seconds = seconds
    return dataset


def _remove_sample_exports(registry: Registry, account_id: str) -> None:
    """Seeding adds the demo's sample export configurations, two on hourly and daily
    schedules: their runs would land in the middle of measurements. The benchmark applies
    its own configurations (bench.exports)."""
    from sqlalchemy import delete

    from registry.models import ExportConfig

    with registry.session() as session:
        session.execute(delete(ExportConfig).where(ExportConfig.account_id == account_id))


def open_synced(home: Path) -> Dataset:
    """The dataset of a bench home that `python -m bench` seeded and synced with this code,
    with this process's environment made the home's (the profilers run on it). Raises
    ValueError, saying so, for any other home: open_dataset would empty it."""
    for name in [n for n in os.environ if n.startswith("QUARRY_") or n == "DAGSTER_HOME"]:
        del os.environ[name]
    os.environ.update(bench_environment(home))
    marker = _read_marker(home)
    if not marker.get("synced") or marker.get("code_version") != code_version():
        raise ValueError(
            f"{home} holds no dataset synced by this code: run python -m bench on it first"
        )
    return open_dataset(
        home,
        orders=int(marker["orders"]),
        stores=int(marker["stores"]),
        seed=int(marker.get("seed", SEED)),
        reuse=True,
    )


def _dataset(
    home: Path, settings: Settings, account_id: str, orders: int, seed: int, synced: bool
) -> Dataset:
    from registry.accounts import get_account, list_stores

    registry = Registry(settings)
    with registry.session() as session:
        account = get_account(session, account_id)
        if (account.currency, account.timezone) != (ACCOUNT_CURRENCY, ACCOUNT_TIMEZONE):
            raise RuntimeError(f"the demo account is not in {ACCOUNT_CURRENCY}/{ACCOUNT_TIMEZONE}")
        stores = [
            BenchStore(s.id, s.name, s.currency, s.timezone)
            for s in list_stores(session, account_id)
        ]
    return Dataset(home, settings, registry, account_id, stores, orders, seed, synced)


def create_key(dataset: Dataset) -> str:
    """A fresh API key for this run, reading every store, with exports."""
    from registry.keys import create_key as new_key

    with dataset.registry.session() as session:
        return new_key(
            session, account_id=dataset.account_id, scopes=("read_data", "exports")
        ).secret


@contextmanager
def demo_files_restored(dataset: Dataset) -> Iterator[None]:
    """Advance the demo platform inside this block; its files are put back afterwards, so a
    reused dataset starts every run from the same seeded data."""
    from platforms.demo.storage import account_dir

    source = account_dir(dataset.settings, dataset.account_id).local_path()
    if source is None:
        raise RuntimeError("the bench's demo files must be local (QUARRY_DATA_URL unset)")
    backup = dataset.home / "demo-before-advance"
    if backup.exists():  # a run that died mid-advance: its backup is the seeded data
        shutil.rmtree(source, ignore_errors=True)
        backup.rename(source)
    shutil.copytree(source, backup)
    try:
        yield
    finally:
        shutil.rmtree(source, ignore_errors=True)
        backup.rename(source)


def table_counts(dataset: Dataset) -> dict[str, int]:
    """Rows per warehouse table in the newest snapshot of every store."""
    from warehouse.reader import WarehouseReader

    reader = WarehouseReader(dataset.settings, dataset.registry)
    try:
        with reader.read(dataset.store_ids) as cursor:
            return {
                table: int(cursor.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
                for table in ("orders", "order_lines", "customers", "products", "sales")
            }
    finally:
        reader.close()


def _read_marker(home: Path) -> dict[str, Any]:
    try:
        return json.loads((home / MARKER).read_text())
    except (OSError, ValueError):
        return {}


def _write_marker(home: Path, content: dict[str, Any]) -> None:
    (home / MARKER).write_text(json.dumps(content, indent=2) + "\n")
