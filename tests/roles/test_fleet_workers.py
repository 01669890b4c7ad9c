"""The proof that a fleet tick spreads over several worker hosts and survives losing one
(docs/deployment.md, "Several worker hosts"): two worker homes, each running a Celery fleet
worker (`quarry fleet-worker`), sharing only PostgreSQL (registry, Dagster's storage, the
lake's catalog), Redis (Celery's broker and results) and moto's S3 server (the lake's data,
the demo platform's files, the values steps hand on).

One slow test: a fleet run orchestrated by its own process (`dagster job execute`, as a run
worker would) sends one step per store to Celery; both workers take some; one worker host's
whole process tree is SIGKILLed while it runs a step, after finishing another; that step is
redelivered to the other worker after the visibility timeout and the run succeeds within the
bound docs/deployment.md states; the lake then holds exactly what the platform holds,
nothing lost or doubled.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
from collections.abc import Iterator

import pyarrow.compute as pc
import pytest
import yaml
from dagster import DagsterEventType, DagsterInstance

from pipelines.fleet.run_config import fleet_run_config
from pipelines.instance import open_instance, role_environment
from pipelines.partitions import sync_store_partitions
from platforms.demo.storage import load_table
from quarry.settings import Settings, load_settings
from registry.db import Registry
from tests.factories import wait_for
from tests.roles.deployment import BIN, ROOT, Deployment, Role
from warehouse.lake import Lake
from warehouse.schemas import SOURCE_DATASETS, TABLES
from warehouse.snapshots import latest_snapshots
from warehouse.tables import qualified, store_predicate

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("several-machines")]

STORES = 6
# docs/deployment.md: a tick that lost a worker host completes within the visibility timeout
# plus the time its steps take again; the test's timeout is short so the proof is quick.
VISIBILITY_TIMEOUT = 30
TICK_BOUND_SECONDS = 180


def _celery_workers(instance: DagsterInstance, run_id: str) -> dict[str, list[str]]:
    """Step key -> the Celery workers that started it, in order (dagster-celery's engine
    event names the worker)."""
    started: dict[str, list[str]] = {}
    records = instance.get_records_for_run(run_id, of_type=DagsterEventType.ENGINE_EVENT).records
    for record in records:
        event = record.event_log_entry.dagster_event
        data = event.engine_event_data if event is not None else None
        if data is None or "Celery worker" not in data.metadata:
            continue
        worker = str(data.metadata["Celery worker"].value).split("@", 1)[0]
        started.setdefault(str(record.event_log_entry.step_key), []).append(worker)
    return started


def _succeeded(instance: DagsterInstance, run_id: str) -> set[str]:
    records = instance.get_records_for_run(run_id, of_type=DagsterEventType.STEP_SUCCESS).records
    return {str(r.event_log_entry.step_key) for r in records}


def _last_events(instance: DagsterInstance, run_id: str, count: int = 25) -> str:
    """The run's last events, one a line: what a timeout reports."""
    records = instance.get_records_for_run(run_id, ascending=False, limit=count).records
    return "\n".join(
        f"{r.event_log_entry.step_key} {r.event_log_entry.user_message[:160]}"
        for r in reversed(records)
    )


@contextlib.contextmanager
def _reaped(process: subprocess.Popen[bytes]) -> Iterator[None]:
    """Kill `process` on the way out if it is still running."""
    try:
        yield
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def _use(monkeypatch: pytest.MonkeyPatch, role: Role) -> Settings:
    """This process as `role` sees the deployment."""
    for name, value in role.env.items():
        if name.startswith(("QUARRY_", "DAGSTER_", "AWS_")):
            monkeypatch.setenv(name, value)
    return load_settings()


def test_a_tick_spreads_over_two_worker_hosts_and_survives_losing_one(
    deployment: Deployment, monkeypatch: pytest.MonkeyPatch
) -> None:
    d = deployment
    d.shared |= {
        "QUARRY_FLEET_EXECUTOR": "celery",
        "QUARRY_FLEET_VISIBILITY_TIMEOUT": str(VISIBILITY_TIMEOUT),
        "QUARRY_LOG_LEVEL": "INFO",
    }
    operator, orchestrator, host_a, host_b = (
        d.role(n) for n in ("operator", "orchestrator", "host-a", "host-b")
    )
    seeded = json.loads(
        operator.run("demo", "seed", "--orders", "1200", "--stores", str(STORES), "--json")
    )
    store_ids = [s["id"] for s in seeded["stores"]]
    for host in (host_a, host_b):
        host.start("fleet-worker", "--concurrency", "1")

    settings = _use(monkeypatch, orchestrator)
    with open_instance(settings) as instance:  # writes the orchestrator's dagster.yaml
        sync_store_partitions(instance, store_ids)
    config = orchestrator.home / "fleet.yaml"
    config.write_text(yaml.safe_dump(fleet_run_config(settings, stores_per_batch=1)))
    log = orchestrator.home.parent / "orchestrator.log"
    started = time.monotonic()
    with log.open("wb") as out:
        run = subprocess.Popen(
            [str(BIN / "dagster"), "job", "execute", "-m", "pipelines.definitions", "-a", "defs",
             "-j", "sync_fleet", "-c", str(config)],
            cwd=ROOT, env=orchestrator.env | role_environment(settings),
            stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip

    # A failed assertion must not leave the orchestrator running after the test.
    with open_instance(settings) as instance, _reaped(run):
        run_id = wait_for(
            lambda: next(iter(r.run_id for r in instance.get_runs(limit=1)), None), "the run"
        )

        # One host has finished a store's step and runs another: that host dies mid-tick.
        # Whichever gets there first: on a loaded machine one host's first step (cold
        # imports, the lake's first tables) can outlast every step the other one runs.
        hosts = {"host-a": host_a, "host-b": host_b}

        def mid_second_step() -> str | None:
            workers, done = _celery_workers(instance, run_id), _succeeded(instance, run_id)
            for name in hosts:
                mine = [
                    s for s, w in workers.items() if s.startswith("sync_batch") and w[-1] == name
                ]
                if any(s in done for s in mine) and any(s not in done for s in mine):
                    return name
            return None

        try:
            victim = wait_for(
                mid_second_step, "a host running its second step", timeout=240, every=0.2
            )
        except AssertionError as exc:
            raise AssertionError(
                f"{exc}\nsteps started, by worker: {_celery_workers(instance, run_id)}\n"
                f"succeeded: {sorted(_succeeded(instance, run_id))}\nlast events:\n"
                f"{_last_events(instance, run_id)}\n{log.read_text()[-3000:]}\n"
                f"host A:\n{host_a.tail()}\nhost B:\n{host_b.tail()}"
            ) from None
        survivor = next(name for name in hosts if name != victim)
        killed = next(
            s
            for s, w in _celery_workers(instance, run_id).items()
            if w[-1] == victim and s not in _succeeded(instance, run_id)
        )
        hosts[victim].kill_tree()

        try:
            status = run.wait(timeout=TICK_BOUND_SECONDS)
        except subprocess.TimeoutExpired:
            raise AssertionError(
                f"the tick hung; last events:\n{_last_events(instance, run_id)}\n"
                f"{survivor}:\n{hosts[survivor].tail()}"
            ) from None
        elapsed = time.monotonic() - started
        assert status == 0, log.read_text()[-3000:]
        assert elapsed < TICK_BOUND_SECONDS
        dagster_run = instance.get_run_by_id(run_id)
        assert dagster_run is not None and dagster_run.is_success
        workers = _celery_workers(instance, run_id)
        # Both hosts did some of the tick; the killed step ran again on the other host.
        batches = {s: w for s, w in workers.items() if s.startswith("sync_batch")}
        assert len(batches) == STORES
        assert {"host-a", "host-b"} <= {w for ws in batches.values() for w in ws}
        assert workers[killed] == [victim, survivor], workers
        assert _succeeded(instance, run_id) >= set(batches)

    # Nothing lost or doubled: every table of every store equals the platform's records.
    lake = Lake(settings)
    try:
        cursor = lake.cursor()
        for store_id in store_ids:
            for dataset, tables in SOURCE_DATASETS.items():
                for table in tables:
                    truth = load_table(settings, seeded["account_id"], store_id, table)
                    key = TABLES[table].primary_key[0]
                    got = cursor.execute(
                        f"SELECT {key} FROM {qualified(table)} WHERE {store_predicate(store_id)}"
                    ).fetchall()
                    ids = [row[0] for row in got]
                    assert len(ids) == len(set(ids)), (store_id, table, "doubled")
                    assert set(ids) == set(pc.cast(truth[key], "string").to_pylist()), (
                        store_id, dataset, table
                    )  # fmt: skip
        cursor.close()
    finally:
        lake.close()
    registry = Registry(settings)
    try:
        with registry.session() as session:
            assert set(latest_snapshots(session, store_ids)) == set(store_ids)
    finally:
        registry.dispose()
