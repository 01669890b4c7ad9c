"""A full re-sync killed mid-run does not leave its store `syncing` for ever (issue 17,
item 3): the next sync of the store, incremental or not, finds the dead run and
GET /v1/stores answers `active` again."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import date
from pathlib import Path

import pytest
from anyio.from_thread import BlockingPortal

from api.main import create_app
from cli.demo_account import seed_demo
from quarry.settings import Settings, load_settings
from registry.accounts import list_stores
from registry.db import Registry
from registry.keys import create_key
from registry.models import Store
from tests.api.conftest import Client

pytestmark = pytest.mark.slow

SHM = Path("/dev/shm")


@pytest.fixture
def settings(quarry_env: Settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[Settings]:
    """quarry_env's home with DAGSTER_HOME of its own (on tmpfs when there is one: Dagster's
    SQLite storage commits every event)."""
    fast = SHM.is_dir() and os.access(SHM, os.W_OK)
    base = Path(tempfile.mkdtemp(prefix="quarry-dagster-", dir=SHM if fast else None))
    monkeypatch.setenv("DAGSTER_HOME", str(base))
    try:
        yield load_settings()
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _quarry(*args: str) -> list[str]:
    return [str(Path(sys.executable).parent / "quarry"), *args]


def _status(registry: Registry, store_id: str) -> str:
    with registry.session() as session:
        store = session.get(Store, store_id)
        assert store is not None
        return store.status


def _kill_once_syncing(registry: Registry, store_id: str) -> None:
    """`quarry sync --full` of the store, killed (SIGKILL, no cleanup of any kind) as soon
    as the store shows `syncing`."""
    process = subprocess.Popen(
        _quarry("sync", "--full", "--store", store_id),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while _status(registry, store_id) != "syncing":
            assert process.poll() is None, process.stderr.read() if process.stderr else ""
            assert time.monotonic() < deadline, "the full re-sync never showed `syncing`"
            time.sleep(0.02)
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def test_a_killed_full_resync_does_not_leave_its_store_syncing(
    settings: Settings, portal: BlockingPortal
) -> None:
    registry = Registry(settings)
    try:
        account_id = seed_demo(
            settings, registry, orders=3_000, stores=1, seed=5, anchor=date(2024, 6, 1)
        )
        with registry.session() as session:
            [store] = list_stores(session, account_id)
            store_id = store.id
            key = create_key(session, account_id=account_id, scopes=["read_data"]).secret

        _kill_once_syncing(registry, store_id)
        assert _status(registry, store_id) == "syncing"  # what the killed run left

        # An incremental sync: it used to leave the status alone.
        done = subprocess.run(_quarry("sync", "--store", store_id), capture_output=True, text=True)
        assert done.returncode == 0, done.stderr

        app = create_app(settings)
        client = Client(app, portal)
        try:
            response = client.get("/v1/stores", key=key)
        finally:
            client.close()
            app.state.reader.close()
            app.state.registry.dispose()
        assert response.status_code == 200, response.text
        assert [s["status"] for s in response.json()] == ["active"]
    finally:
        registry.dispose()
