"""A small, exactly known warehouse for the export tests (the API tests' world: accounts
a, b, c; stores st_a1..st_a3 with st_a3 hostile, st_b1, st_c1), and helpers to apply
configurations and run jobs in this process.

And the end-to-end stack, as `quarry up` runs it (`stack`, one per session, shared by
test_end_to_end.py and test_destinations_end_to_end.py, both in the xdist group
"exports-end-to-end"): the API under uvicorn, dagster-webserver and dagster-daemon on free
loopback ports with a temporary DAGSTER_HOME, a seeded and synced demo account. The
destination servers' fixtures (tests/destinations/servers.py) are registered here too.
"""

from __future__ import annotations

import contextlib
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
from typing import Any

import httpx
import pytest
import yaml

from cli.demo_account import seed_demo
from exports.configs.document import validate_document
from exports.configs.saved import account_context, apply_definitions, apply_file
from exports.jobs.execute import ExportFailed, execute_job
from exports.jobs.lifecycle import create_job
from pipelines.instance import write_instance_config
from pipelines.runner import sync_stores
from quarry.files import export_files
from quarry.settings import Settings, load_settings
from registry.accounts import list_stores
from registry.db import Registry
from registry.keys import create_key
from registry.models import ExportConfig
from tests.api.conftest import isolated_env
from tests.api.world import World, build_world
from tests.destinations.servers import use_servers
from tests.factories import free_port, wait_for

SHM = Path("/dev/shm")
ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
STOP_GRACE = 10.0


def pytest_configure(config: pytest.Config) -> None:
    use_servers(config)


@pytest.fixture(scope="session")
def export_world() -> Iterator[World]:
    # On tmpfs when there is one: the world's lake commits take a fraction of the time.
    fast = SHM.is_dir() and os.access(SHM, os.W_OK)
    base = Path(tempfile.mkdtemp(prefix="quarry-exports-", dir=SHM if fast else None))
    with isolated_env(str(base / "quarry-home")):
        settings = load_settings()
    world = build_world(settings)
    yield world
    world.registry.dispose()
    shutil.rmtree(base, ignore_errors=True)


def apply_yaml(world: World, account: str, document: dict) -> dict[str, str]:
    """Apply configurations (a parsed YAML document) to account `account` ("a", "b", "c");
    returns name -> configuration id."""
    with world.registry.session() as session:
        context = account_context(session, world.settings, world.accounts[account])
        definitions = validate_document(document, context, source="test.yaml")
        applied = apply_definitions(session, world.settings, world.accounts[account], definitions)
    return {item.name: item.id for item in applied}


def new_job(world: World, config_id: str, **values: object) -> str:
    """A queued job of the configuration, with `values` set on its row; its id."""
    with world.registry.session() as session:
        job, _ = create_job(session, session.get(ExportConfig, config_id))
        for name, value in values.items():
            setattr(job, name, value)
        return job.id


def run_config(world: World, config_id: str, **kwargs: object) -> tuple[str, str | None]:
    """Create a job of the configuration and execute it here; (job id, failure or None)."""
    job_id = new_job(world, config_id)
    try:
        execute_job(world.settings, world.registry, job_id, f"run-{job_id}", **kwargs)  # type: ignore[arg-type]
    except ExportFailed as exc:
        return job_id, exc.reason
    return job_id, None


def stored(settings: Settings, world: World, job_id: str) -> Path:
    from registry.models import ExportJob

    with world.registry.session() as session:
        job = session.get(ExportJob, job_id)
        assert job is not None and job.file_path is not None
        local = export_files(settings).local_path(job.file_path)
        assert local is not None
        return local


# --- The end-to-end stack -------------------------------------------------------------------


class Services:
    """Child processes in their own sessions, stopped like `quarry up` stops them."""

    def __init__(self, env: dict[str, str], logs: Path) -> None:
        self.env, self.logs = env, logs
        self.children: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, name: str, *command: str) -> None:
        log = (self.logs / f"{name}.log").open("ab")
        self.children[name] = subprocess.Popen(
            command,
            cwd=ROOT,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def stop(self, *names: str) -> None:
        """Stop the named children (all without names), SIGTERM then SIGKILL."""
        stopping = [
            self.children.pop(n) for n in names or list(self.children) if n in self.children
        ]
        for child in stopping:
            _signal(child, signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE
        while time.monotonic() < deadline and any(c.poll() is None for c in stopping):
            time.sleep(0.2)
        for child in stopping:
            _signal(child, signal.SIGKILL)
            child.wait()


def _signal(child: subprocess.Popen[bytes], signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(child.pid, signum)


class Stack:
    def __init__(self, settings: Settings, registry: Registry, services: Services) -> None:
        self.settings, self.registry, self.services = settings, registry, services
        self.api_port, self.dagster_port = free_port(), free_port()
        self.http = httpx.Client(base_url=f"http://127.0.0.1:{self.api_port}", timeout=30)
        self.account = ""
        self.key = ""
        self.store_ids: list[str] = []
        self.dagster_started = False

    def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.key}", **kwargs.pop("headers", {})}
        return self.http.request(method, path, headers=headers, **kwargs)

    def config_id(self, name: str) -> str:
        with self.registry.session() as session:
            return next(
                c.id for c in session.query(ExportConfig).filter_by(account_id=self.account)
                if c.name == name
            )  # fmt: skip

    def run(self, name: str) -> str:
        response = self.request("POST", f"/v1/exports/{self.config_id(name)}/run")
        assert response.status_code == 202, response.text
        return response.json()["job_id"]

    def job(self, job_id: str) -> dict[str, Any]:
        response = self.request("GET", f"/v1/export-jobs/{job_id}")
        assert response.status_code == 200, response.text
        return response.json()

    def finished(self, job_id: str, timeout: float = 120.0) -> dict[str, Any]:
        return wait_for(
            lambda: (j := self.job(job_id))["status"] in ("completed", "failed") and j,
            f"job {job_id} to finish",
            timeout,
        )

    def download(self, job_id: str) -> httpx.Response:
        return self.request("GET", f"/v1/export-jobs/{job_id}/download")

    def start_dagster(self) -> None:
        if self.dagster_started:
            return
        self.dagster_started = True
        # The orchestrator role as operators start it: Dagster's webserver and daemon and
        # the housekeeper (the reaper and reconciler of export jobs).
        self.services.start(
            "orchestrator", str(BIN / "quarry"), "orchestrator", "--port", str(self.dagster_port)
        )
        # Generous: on a loaded 2-core CI machine (other tests spawn processes of their own)
        # a restart once took longer than 120 s. The log says why when it does not come up.
        try:
            wait_for(self._dagster_up, "the Dagster webserver", timeout=240)
        except AssertionError as exc:
            log = self.services.logs / "orchestrator.log"
            tail = log.read_text(errors="replace")[-3000:] if log.exists() else "(no log)"
            raise AssertionError(f"{exc}; its log ends with:\n{tail}") from None

    def stop_dagster(self) -> None:
        """Dagster down (the API stays up); start_dagster starts it again with the
        services' environment as it is then."""
        if not self.dagster_started:
            return
        self.services.stop("orchestrator")
        self.dagster_started = False

    def _dagster_up(self) -> bool:
        try:
            response = httpx.get(f"http://127.0.0.1:{self.dagster_port}/server_info", timeout=2)
        except httpx.HTTPError:
            return False
        return response.status_code == 200


@pytest.fixture(scope="session")
def stack() -> Iterator[Stack]:
    fast = Path("/dev/shm").is_dir() and os.access("/dev/shm", os.W_OK)
    base = Path(tempfile.mkdtemp(prefix="quarry-e2e-", dir="/dev/shm" if fast else None))
    dagster_port = free_port()
    extra = {
        "DAGSTER_HOME": str(base / "dagster"),
        "QUARRY_DAGSTER_URL": f"http://127.0.0.1:{dagster_port}",
        # The destination end-to-end tests deliver to servers on loopback.
        "QUARRY_ALLOW_PRIVATE_HOSTS": "true",
    }
    with isolated_env(str(base / "quarry-home"), **extra):
        settings = load_settings()
        env = dict(os.environ)
    # The checkout on the path of every child, whatever the installed package lists.
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    write_instance_config(settings)
    registry = Registry(settings)
    services = Services(env, base)
    made = Stack(settings, registry, services)
    made.dagster_port = dagster_port
    # Signed links in export emails point at this API, as an operator would set it.
    services.env["QUARRY_PUBLIC_URL"] = f"http://127.0.0.1:{made.api_port}"
    try:
        with isolated_env(str(settings.home), **extra):
            made.account = seed_demo(
                settings, registry, orders=600, stores=3, seed=5, anchor=date(2024, 6, 1)
            )
            with registry.session() as session:
                made.store_ids = [s.id for s in list_stores(session, made.account)]
                made.key = create_key(
                    session, account_id=made.account, scopes=["read_data", "exports"]
                ).secret
            outcomes = sync_stores(settings, registry)
            assert all(o.success for o in outcomes), [o.error for o in outcomes]
        services.start(
            "api", sys.executable, "-m", "uvicorn", "api.main:create_app", "--factory",
            "--host", "127.0.0.1", "--port", str(made.api_port),
        )  # fmt: skip
        wait_for(lambda: _answers(made), "the API")
        yield made
    finally:
        services.stop()
        made.http.close()
        registry.dispose()
        shutil.rmtree(base, ignore_errors=True)


def _answers(stack: Stack) -> bool:
    try:
        return stack.http.get("/healthz").status_code == 200
    except httpx.HTTPError:
        return False


def apply(stack: Stack, document: dict[str, Any]) -> None:
    path = stack.settings.home / "e2e.yaml"
    path.write_text(yaml.safe_dump(document, allow_unicode=True))
    with stack.registry.session() as session:
        apply_file(session, stack.settings, stack.account, path)
