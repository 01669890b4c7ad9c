"""The proof of the several-machines set-up (docs/deployment.md): three roles, each its own
process tree with its own QUARRY_HOME and no path shared, sharing only PostgreSQL (registry,
Dagster's storage, the lake's catalog), Redis (rate limits) and moto's S3 server (the lake's
data, export files, the demo platform's files).

One slow test, in order: seed and sync (the runs execute in the worker role), query and page
through the API role; a CSV and an XLSX export downloaded byte-identical to what the worker
wrote to S3, with nothing of either in the API role's home; the worker killed mid-export
(the job fails within 90 s, a new worker re-runs it); a second API process shares the rate
limit and serves the same download.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
import yaml
from sqlalchemy.engine import make_url

from tests.conftest import _create_database, _drop_database
from tests.destinations.servers import S3Server
from tests.factories import free_port, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("several-machines")]

BIN = Path(sys.executable).parent
ROOT = Path(__file__).resolve().parents[2]
HEARTBEAT_TIMEOUT = 20
FAIL_WITHIN = 90.0
# Requests per key per hour: more than any phase of the test sends with one key.
RATE_LIMIT = 300


def descendants(pid: int) -> list[int]:
    """`pid` and every process under it, from /proc (children first found, then theirs)."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        parents.setdefault(parent, []).append(int(entry.name))
    found, queue = [], [pid]
    while queue:
        current = queue.pop()
        found.append(current)
        queue.extend(parents.get(current, []))
    return found


@dataclass
class Role:
    """One role: a process tree started with its own home and identity."""

    name: str
    home: Path
    env: dict[str, str]
    process: subprocess.Popen[bytes] | None = None
    log: Path = field(init=False)

    def __post_init__(self) -> None:
        self.log = self.home.parent / f"{self.name}.log"

    def start(self, *args: str) -> None:
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [str(BIN / "quarry"), *args],
                cwd=ROOT,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def run(self, *args: str) -> str:
        done = subprocess.run(
            [str(BIN / "quarry"), *args], cwd=ROOT, env=self.env, capture_output=True, text=True
        )
        assert done.returncode == 0, (args, done.stdout, done.stderr)
        return done.stdout

    def kill_tree(self) -> None:
        """SIGKILL to the role's whole process tree, as a machine that dies."""
        assert self.process is not None
        for pid in reversed(descendants(self.process.pid)):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.kill_tree()

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-4000:] if self.log.exists() else ""


@dataclass
class Deployment:
    base: Path
    shared: dict[str, str]
    s3: S3Server
    bucket: str
    roles: dict[str, Role] = field(default_factory=dict)
    ports: dict[str, int] = field(default_factory=dict)

    def role(self, name: str) -> Role:
        home = self.base / name / "home"
        home.mkdir(parents=True, exist_ok=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("QUARRY_", "DAGSTER_"))}
        env |= self.shared | {"QUARRY_HOME": str(home), "QUARRY_ROLE_ID": name}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
        made = Role(name, home, env)
        self.roles[name] = made
        return made

    def s3_object(self, key: str) -> bytes:
        client = self.s3.admin_client()
        return client.get_object(Bucket=self.bucket, Key=key)["Body"].read()  # type: ignore[attr-defined]


def _plain(url: str) -> str:
    """libpq's form of a SQLAlchemy URL (no +driver), as Dagster's storage wants it."""
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


@pytest.fixture
def deployment(tmp_path: Path, s3_server: S3Server) -> Iterator[Deployment]:
    databases = [_create_database() for _ in range(3)]
    (registry_db, registry_url), (dagster_db, dagster_url), (catalog_db, catalog_url) = databases
    bucket = f"several-{uuid.uuid4().hex[:10]}"
    s3_server.admin_client().create_bucket(Bucket=bucket)  # type: ignore[attr-defined]
    redis_db = 7
    redis.Redis.from_url(f"redis://127.0.0.1:6379/{redis_db}").flushdb()
    ports = {"api": free_port(), "api2": free_port(), "dagster": free_port(), "worker": free_port()}
    from cryptography.fernet import Fernet

    shared = {
        "QUARRY_DATABASE_URL": registry_url,
        "QUARRY_CATALOG_URL": _plain(catalog_url),
        "QUARRY_DATA_URL": f"s3://{bucket}/quarry",
        "QUARRY_S3_ENDPOINT_URL": s3_server.endpoint_url,
        "QUARRY_S3_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": s3_server.admin["access_key_id"],
        "AWS_SECRET_ACCESS_KEY": s3_server.admin["secret_access_key"],
        "QUARRY_DAGSTER_POSTGRES_URL": _plain(dagster_url),
        "QUARRY_REDIS_URL": f"redis://127.0.0.1:6379/{redis_db}",
        "QUARRY_SECRET_KEY": Fernet.generate_key().decode(),
        "QUARRY_DAGSTER_URL": f"http://127.0.0.1:{ports['dagster']}",
        "QUARRY_WORKER_ADDRESS": f"127.0.0.1:{ports['worker']}",
        "QUARRY_HEARTBEAT_TIMEOUT_SECONDS": str(HEARTBEAT_TIMEOUT),
        "QUARRY_RATE_LIMIT": f"{RATE_LIMIT}/3600",
    }
    made = Deployment(tmp_path, shared, s3_server, bucket, ports=ports)
    try:
        yield made
    finally:
        for role in made.roles.values():
            role.stop()
        for name, _ in databases:
            _drop_database(name)
        del registry_db, dagster_db, catalog_db


def _up(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def _files_under(home: Path) -> list[str]:
    return sorted(str(p.relative_to(home)) for p in home.rglob("*") if p.is_file())


def test_three_roles_share_only_postgresql_redis_and_s3(deployment: Deployment) -> None:
    d = deployment
    operator, api, orchestrator, worker = (
        d.role(n) for n in ("operator", "api", "orchestrator", "worker")
    )
    worker.start("worker", "--port", str(d.ports["worker"]))
    orchestrator.start("orchestrator", "--port", str(d.ports["dagster"]))
    api.start("serve", "--port", str(d.ports["api"]))
    base = f"http://127.0.0.1:{d.ports['api']}"
    dagster = f"{d.shared['QUARRY_DAGSTER_URL']}/server_info"
    for url, role in ((f"{base}/healthz", api), (dagster, orchestrator)):
        try:
            wait_for(lambda u=url: _up(u), url, timeout=240)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{role.name} log:\n{role.tail()}") from None

    # 1. Seed (demo files to S3), sync: the runs execute in the worker role.
    seeded = json.loads(
        operator.run("demo", "seed", "--orders", "20000", "--stores", "2", "--json")
    )
    account = seeded["account_id"]
    synced = operator.run("sync", "--on-worker")
    assert all(s["id"] in synced for s in seeded["stores"]), synced
    logs = worker.home / "dagster" / "compute_logs"
    assert logs.is_dir() and any(logs.rglob("*")), (
        "the sync runs' logs are not in the worker's home"
    )

    def key(scopes: str = "read_data,exports") -> str:
        created = operator.run("keys", "create", "--account", account, "--scopes", scopes, "--json")
        made = json.loads(created)
        return str(made["key"])

    http = httpx.Client(base_url=base, timeout=60, headers={"Authorization": f"Bearer {key()}"})
    stores = http.get("/v1/stores").json()
    assert sorted(s["id"] for s in stores) == sorted(s["id"] for s in seeded["stores"])
    page = http.get("/v1/orders", params={"page_size": 5})
    assert page.status_code == 200 and len(page.json()["data"]) == 5, page.text
    shopifyql = "FROM sales SHOW total_sales GROUP BY month SINCE -2y UNTIL today"
    query = http.post("/v1/query", json={"query": shopifyql})
    assert query.status_code == 200, query.text

    # 2. A CSV and an XLSX export through the API role, byte-identical to the worker's file.
    document = {"exports": [
        {"name": "Orders CSV", "entity_type": "orders", "format": "csv"},
        {"name": "Orders XLSX", "entity_type": "orders", "format": "xlsx"},
    ]}  # fmt: skip
    path = operator.home / "exports.yaml"
    path.write_text(yaml.safe_dump(document))
    operator.run("exports", "apply", "--account", account, "--file", str(path))
    configs = {c["name"]: c["id"] for c in http.get("/v1/exports").json()["data"]}

    def run(name: str, client: httpx.Client = http) -> str:
        started = client.post(f"/v1/exports/{configs[name]}/run")
        assert started.status_code == 202, started.text
        return str(started.json()["job_id"])

    def finished(job_id: str, client: httpx.Client = http, timeout: float = 180) -> dict[str, Any]:
        def ended() -> dict[str, Any] | None:
            job = client.get(f"/v1/export-jobs/{job_id}").json()
            return job if job["status"] in ("completed", "failed") else None

        return wait_for(ended, f"export job {job_id}", timeout=timeout, every=1)  # type: ignore[no-any-return]

    downloads = {}
    for name, extension in (("Orders CSV", "csv"), ("Orders XLSX", "xlsx")):
        job_id = run(name)
        job = finished(job_id)
        assert job["status"] == "completed", job
        got = http.get(f"/v1/export-jobs/{job_id}/download")
        assert got.status_code == 200
        stored = d.s3_object(f"quarry/exports/{job_id}/export.{extension}")
        assert got.content == stored and len(stored) > 1000
        downloads[job_id] = got.content
    held = [
        f for f in _files_under(api.home) if f.endswith((".parquet", ".csv", ".xlsx", ".sqlite"))
    ]
    assert held == [], f"the API role's home holds data: {held}"
    assert not (api.home / "exports").exists() or not _files_under(api.home / "exports")

    # 3. The worker dies mid-export: the job fails within 90 s; a new worker re-runs it.
    slow = key()
    killer = httpx.Client(base_url=base, timeout=60, headers={"Authorization": f"Bearer {slow}"})
    job_id = run("Orders XLSX", killer)

    def running() -> bool:
        return killer.get(f"/v1/export-jobs/{job_id}").json()["status"] == "running"

    wait_for(running, "the export to start on the worker", timeout=120)
    worker.kill_tree()
    killed_at = time.monotonic()
    try:
        job = finished(job_id, killer, timeout=FAIL_WITHIN + 10)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\norchestrator log:\n{orchestrator.tail()}") from None
    assert time.monotonic() - killed_at <= FAIL_WITHIN
    # Killed before or after the run claimed the job: either way it ends with a reason.
    assert job["status"] == "failed" and "run the export again" in job["error"], job
    worker.start("worker", "--port", str(d.ports["worker"]))
    rerun = run("Orders XLSX", killer)
    assert finished(rerun, killer)["status"] == "completed"

    # 4. A second API process (a fourth home) shares the rate limit and serves the download.
    api2 = d.role("api2")
    api2.start("serve", "--port", str(d.ports["api2"]))
    base2 = f"http://127.0.0.1:{d.ports['api2']}"
    wait_for(lambda: _up(f"{base2}/healthz"), "the second API", timeout=120)
    shared_key = {"Authorization": f"Bearer {key('read_data')}"}
    clients = [httpx.Client(base_url=b, timeout=30, headers=shared_key) for b in (base, base2)]
    answers = [clients[i % 2].get("/v1/stores").status_code for i in range(RATE_LIMIT + 1)]
    # One bucket across both processes: the limit holds for the sum of their requests.
    assert answers[:RATE_LIMIT] == [200] * RATE_LIMIT and answers[RATE_LIMIT] == 429
    first = next(iter(downloads))
    again = httpx.get(f"{base2}/v1/export-jobs/{first}/download", headers=http.headers, timeout=60)
    assert again.status_code == 200 and again.content == downloads[first]
    assert not [f for f in _files_under(api2.home) if f.endswith((".csv", ".xlsx", ".parquet"))]
