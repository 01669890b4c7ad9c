"""Exports end to end, as `quarry up` runs them: the API under uvicorn, dagster-webserver and
dagster-daemon on free loopback ports with a temporary DAGSTER_HOME, a synced demo account.

One slow path, in order: a job accepted while Dagster is down completes once it is up; a run
is polled and downloaded and its rows equal the record endpoint's; the hostile store comes
out inert in every format; a worker killed mid-run ends its job failed and a rerun succeeds;
a full re-sync removes exactly that store's files.
"""

from __future__ import annotations

import contextlib
import csv
import io
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterator
from datetime import date
from pathlib import Path
from typing import Any

import httpx
import openpyxl
import pytest
import yaml

from destinations.base import Delivery, temporary_name
from exports.configs import apply_file
from exports.neutralise import FORMULA_TRIGGERS, neutralise
from pipelines.instance import write_instance_config
from pipelines.runner import sync_stores
from platforms.demo.seed import seed_demo
from quarry.settings import Settings, load_settings
from registry.accounts import list_stores
from registry.db import Registry
from registry.keys import create_key
from registry.models import ExportConfig, ExportJob
from tests.api.conftest import isolated_env

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("exports-end-to-end")]
ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
ISO = "%Y-%m-%dT%H:%M:%S.%fZ"
STOP_GRACE = 10.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for(check: Callable[[], Any], what: str, timeout: float = 90.0, every: float = 0.5) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


class Services:
    """Child processes in their own sessions, stopped like `quarry up` stops them."""

    def __init__(self, env: dict[str, str], logs: Path) -> None:
        self.env, self.logs = env, logs
        self.children: list[subprocess.Popen[bytes]] = []

    def start(self, name: str, *command: str) -> None:
        log = (self.logs / f"{name}.log").open("wb")
        self.children.append(
            subprocess.Popen(
                command,
                cwd=ROOT,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        )

    def stop(self) -> None:
        for child in self.children:
            _signal(child, signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE
        while time.monotonic() < deadline and any(c.poll() is None for c in self.children):
            time.sleep(0.2)
        for child in self.children:
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
        self.waiting_job = ""
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
        workspace = str(ROOT / "workspace.yaml")
        self.services.start(
            "dagster-webserver", str(BIN / "dagster-webserver"), "-w", workspace,
            "-h", "127.0.0.1", "-p", str(self.dagster_port),
        )  # fmt: skip
        self.services.start("dagster-daemon", str(BIN / "dagster-daemon"), "run", "-w", workspace)
        wait_for(self._dagster_up, "the Dagster webserver", timeout=120)

    def _dagster_up(self) -> bool:
        try:
            response = httpx.get(f"http://127.0.0.1:{self.dagster_port}/server_info", timeout=2)
        except httpx.HTTPError:
            return False
        return response.status_code == 200


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    fast = Path("/dev/shm").is_dir() and os.access("/dev/shm", os.W_OK)
    base = Path(tempfile.mkdtemp(prefix="quarry-e2e-", dir="/dev/shm" if fast else None))
    dagster_port = free_port()
    extra = {
        "DAGSTER_HOME": str(base / "dagster"),
        "QUARRY_DAGSTER_URL": f"http://127.0.0.1:{dagster_port}",
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


def test_a_job_accepted_while_dagster_is_down_waits(stack: Stack) -> None:
    ready = stack.http.get("/readyz").json()
    assert ready["exports"]["dagster_webserver"] == "unreachable"
    stack.waiting_job = stack.run("Orders (CSV)")
    time.sleep(2)
    assert stack.job(stack.waiting_job)["status"] == "queued"


def test_it_completes_once_dagster_is_up(stack: Stack) -> None:
    stack.start_dagster()
    assert stack.http.get("/readyz").json()["exports"]["dagster_webserver"] == "reachable"
    job = stack.finished(stack.waiting_job)
    assert job["status"] == "completed", job
    assert stack.download(stack.waiting_job).status_code == 200


def test_rows_equal_the_record_endpoint(stack: Stack) -> None:
    stack.start_dagster()
    filters = {"financial_status": "paid,refunded", "created_at_min": "2023-09-01"}
    apply(stack, {"exports": [{
        "name": "E2E paid", "entity_type": "orders", "format": "csv", "filters": filters,
        "format_options": {"date_format": ISO, "time_zone": "UTC"},
    }]})  # fmt: skip
    job_id = stack.run("E2E paid")
    assert stack.job(job_id)["status"] in ("queued", "running")
    job = stack.finished(job_id)
    assert job["status"] == "completed", job
    response = stack.download(job_id)
    assert response.headers["content-type"].startswith("text/csv")
    assert "filename*=UTF-8''E2E%20paid" in response.headers["content-disposition"]
    rows = list(csv.reader(io.StringIO(response.content.decode("utf-8"), newline="")))
    records = []
    page = 1
    while True:
        body = stack.request(
            "GET", "/v1/orders", params={**filters, "page": page, "page_size": 250}
        ).json(parse_float=str, parse_int=str)
        records += body["data"]
        if not body["has_more"]:
            break
        page += 1
    assert len(records) > 50 and len(rows) - 1 == len(records)
    for got, record in zip(rows[1:], records, strict=True):
        assert got == [_text(v) for v in record.values()]


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return neutralise(value) if isinstance(value, str) else str(value)


def test_the_hostile_store_is_inert_in_every_format(stack: Stack) -> None:
    stack.start_dagster()
    jobs = {name: stack.run(name) for name in
            ("Orders (CSV)", "Customers (Excel)", "Catalog and sales (zip)")}  # fmt: skip
    files = {}
    for name, job_id in jobs.items():
        assert stack.finished(job_id)["status"] == "completed", stack.job(job_id)
        files[name] = stack.download(job_id).content
    _inert_csv(files["Orders (CSV)"])
    _inert_xlsx(files["Customers (Excel)"])
    with zipfile.ZipFile(io.BytesIO(files["Catalog and sales (zip)"])) as archive:
        for member in archive.namelist():
            _inert_csv(archive.read(member))


def _inert_csv(data: bytes) -> None:
    text = data.decode("utf-8").removeprefix("\ufeff")
    rows = list(csv.reader(io.StringIO(text, newline="")))
    assert len(rows) > 1
    for row in rows:
        for cell in row:
            assert not cell.startswith(FORMULA_TRIGGERS) or cell == neutralise(cell), cell


def _inert_xlsx(data: bytes) -> None:
    book = openpyxl.load_workbook(io.BytesIO(data))
    for sheet in book.worksheets:
        for row in sheet.iter_rows():
            for cell in row:
                assert cell.data_type != "f", cell.coordinate
                if isinstance(cell.value, str) and cell.value.startswith(FORMULA_TRIGGERS):
                    assert cell.quotePrefix, (cell.coordinate, cell.value)


def test_a_killed_worker_fails_its_job_and_a_rerun_succeeds(stack: Stack) -> None:
    stack.start_dagster()
    folder = stack.settings.home / "e2e-deliveries"
    folder.mkdir(exist_ok=True)
    apply(stack, {"exports": [{
        "name": "E2E kill", "entity_type": "products", "format": "csv",
        "file_name": "{name}-{job_id}",
        "destination": {"kind": "local", "settings": {"folder": "e2e-deliveries"}},
    }]})  # fmt: skip
    job_id = stack.run("E2E kill")
    # A FIFO where the delivery writes its temporary file: opening it blocks the worker
    # mid-run until we kill it.
    file_name = f"E2E kill-{job_id}.csv"
    fifo = folder / temporary_name(Delivery(Path("x"), file_name, job_id, "text/csv"))
    os.mkfifo(fifo)
    try:
        worker = wait_for(lambda: _worker(stack, job_id), "the worker to block", timeout=120)
        assert stack.job(job_id)["status"] == "running"
        os.kill(int(worker.rsplit(":", 1)[1]), signal.SIGKILL)
        job = stack.finished(job_id, timeout=90)
        assert job["status"] == "failed", job
        assert "stopped" in job["error"] and "run the export again" in job["error"], job
        assert job["file_name"] == file_name
    finally:
        fifo.unlink(missing_ok=True)
    rerun = stack.run("E2E kill")
    assert stack.finished(rerun)["status"] == "completed", stack.job(rerun)
    assert (folder / f"E2E kill-{rerun}.csv").is_file()


def _worker(stack: Stack, job_id: str) -> str | None:
    with stack.registry.session() as session:
        job = session.get(ExportJob, job_id)
        return job.worker if job is not None and job.file_name and job.worker else None


def test_a_full_resync_removes_exactly_that_stores_files(stack: Stack) -> None:
    stack.start_dagster()
    first, second = stack.store_ids[:2]
    apply(stack, {"exports": [
        {"name": "E2E store 1", "entity_type": "customers", "format": "csv", "stores": [first]},
        {"name": "E2E store 2", "entity_type": "customers", "format": "csv", "stores": [second]},
    ]})  # fmt: skip
    one, two = stack.run("E2E store 1"), stack.run("E2E store 2")
    assert stack.finished(one)["status"] == stack.finished(two)["status"] == "completed"
    with isolated_env(
        str(stack.settings.home), DAGSTER_HOME=str(stack.settings.resolved_dagster_home)
    ):
        outcomes = sync_stores(stack.settings, stack.registry, [first], full=True)
    assert all(o.success for o in outcomes), [o.error for o in outcomes]
    assert stack.download(one).status_code == 404
    assert stack.job(one)["file_removed_at"] is not None
    assert stack.download(two).status_code == 200
