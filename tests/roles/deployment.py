"""A deployment of several roles on one machine, as the several-machines proofs use it:
each role a process tree with its own QUARRY_HOME and identity, sharing only PostgreSQL
(registry, Dagster's storage, the lake's catalog), Redis and moto's S3 server."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import redis
from sqlalchemy.engine import make_url

from tests.conftest import _create_database, _drop_database
from tests.destinations.servers import S3Server
from tests.factories import free_port, parent_pid

BIN = Path(sys.executable).parent
ROOT = Path(__file__).resolve().parents[2]
HEARTBEAT_TIMEOUT = 20
# Requests per key per hour: more than any phase of a proof sends with one key.
RATE_LIMIT = 300


def descendants(pid: int) -> list[int]:
    """`pid` and every process under it, from /proc (children first found, then theirs)."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parent = parent_pid(int(entry.name))
        except OSError:
            continue
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


def plain(url: str) -> str:
    """libpq's form of a SQLAlchemy URL (no +driver), as Dagster's storage wants it."""
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


@contextlib.contextmanager
def deploy(tmp_path: Path, s3_server: S3Server) -> Iterator[Deployment]:
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
        "QUARRY_CATALOG_URL": plain(catalog_url),
        "QUARRY_DATA_URL": f"s3://{bucket}/quarry",
        "QUARRY_S3_ENDPOINT_URL": s3_server.endpoint_url,
        "QUARRY_S3_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": s3_server.admin["access_key_id"],
        "AWS_SECRET_ACCESS_KEY": s3_server.admin["secret_access_key"],
        "QUARRY_DAGSTER_POSTGRES_URL": plain(dagster_url),
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
