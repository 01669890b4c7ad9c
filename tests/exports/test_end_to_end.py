"""Exports end to end, as `quarry up` runs them: the API under uvicorn, dagster-webserver and
dagster-daemon on free loopback ports with a temporary DAGSTER_HOME, a synced demo account.

The stack is the session fixture `stack` (tests/exports/conftest.py). One slow path, in
order: a job accepted while Dagster is down completes once it is up; a run
is polled and downloaded and its rows equal the record endpoint's; the hostile store comes
out inert in every format; a worker killed mid-run ends its job failed and a rerun succeeds;
a full re-sync removes exactly that store's files.
"""

from __future__ import annotations

import csv
import io
import os
import signal
import time
import zipfile
from pathlib import Path
from typing import Any

import openpyxl
import pytest

from exports.files.neutralise import FORMULA_TRIGGERS, neutralise
from exports.files.produce import file_key
from pipelines.runner import sync_stores
from quarry.files import TEMPORARY_MARK, export_files
from registry.models import ExportJob
from tests.api.conftest import isolated_env
from tests.exports.conftest import Stack, apply
from tests.factories import parent_pid, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("exports-end-to-end")]
ISO = "%Y-%m-%dT%H:%M:%S.%fZ"


def test_a_job_accepted_while_dagster_is_down_completes_once_it_is_up(stack: Stack) -> None:
    # One test, not two: the job's id must not travel between tests through shared state.
    stack.stop_dagster()  # the stack is shared: another module may have started it
    ready = stack.http.get("/readyz").json()
    assert ready["exports"]["dagster_webserver"] == "unreachable"
    waiting_job = stack.run("Orders (CSV)")
    time.sleep(2)
    assert stack.job(waiting_job)["status"] == "queued"

    stack.start_dagster()
    assert stack.http.get("/readyz").json()["exports"]["dagster_webserver"] == "reachable"
    job = stack.finished(waiting_job)
    assert job["status"] == "completed", job
    assert stack.download(waiting_job).status_code == 200


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
    apply(stack, {"exports": [{
        "name": "E2E kill", "entity_type": "products", "format": "csv",
        # A weekday name: a format only the Python CSV writer formats, which opens the
        # file itself (DuckDB's COPY would write beside an existing file and rename).
        "format_options": {"date_format": "%A %Y-%m-%d"},
        "destination": {"kind": "local", "settings": {"folder": "e2e-deliveries"}},
    }]})  # fmt: skip
    job_id = stack.run("E2E kill")
    # A FIFO where the job writes its file: opening it blocks the worker mid-run, with the
    # job running, until we kill it. The run takes seconds to start; this takes none.
    target = export_files(stack.settings).local_path(file_key(job_id, "csv"))
    assert target is not None
    partial = target.with_name(f"{target.name}{TEMPORARY_MARK}run")
    partial.parent.mkdir(parents=True)
    os.mkfifo(partial)
    # What a writer of the run leaves beside it: the reaper removes it with the job.
    leftover = target.with_name("tmpk1ll3d")
    leftover.write_text("half")
    try:
        worker = wait_for(lambda: _worker(stack, job_id), "the worker to start", timeout=120)
        assert stack.job(job_id)["status"] == "running"
        pid = int(worker.rsplit(":", 1)[1])
        # The run is a fork of the code server's warm process (pipelines.code_server), not
        # a new interpreter that imports the code location again.
        assert "multiprocessing.forkserver" in _command_line(parent_pid(pid))
        os.kill(pid, signal.SIGKILL)
        job = stack.finished(job_id, timeout=90)
        assert job["status"] == "failed", job
        assert "stopped" in job["error"] and "run the export again" in job["error"], job
        assert job["file_name"] is None, job  # killed before its file was complete
        # The reaper removes it right after it fails the job.
        wait_for(lambda: not leftover.exists(), "the reaper to remove leftovers", timeout=30)
    finally:
        partial.unlink(missing_ok=True)
    rerun = stack.run("E2E kill")
    assert stack.finished(rerun)["status"] == "completed", stack.job(rerun)


def _command_line(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()


def _worker(stack: Stack, job_id: str) -> str | None:
    with stack.registry.session() as session:
        job = session.get(ExportJob, job_id)
        return job.worker if job is not None and job.status == "running" else None


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


def test_two_runs_of_a_changed_rows_export_go_one_after_the_other(stack: Stack) -> None:
    stack.start_dagster()
    apply(stack, {"exports": [{
        "name": "E2E changes", "entity_type": "orders", "format": "jsonl", "rows": "changed",
        "columns": ["order_name", "total_price"], "stores": [stack.store_ids[0]],
        "destination": {"kind": "local", "settings": {"folder": "e2e-deliveries"}},
    }]})  # fmt: skip
    # Two runs at once: two jobs; Dagster's queue holds the second until the first ends.
    first, second = stack.run("E2E changes"), stack.run("E2E changes")
    assert first != second
    done = [stack.finished(first, timeout=180), stack.finished(second, timeout=180)]
    assert [j["status"] for j in done] == ["completed", "completed"], done
    manifests = [
        stack.request("GET", f"/v1/export-jobs/{j}/manifest").json() for j in (first, second)
    ]
    # Whichever ran first delivered every row; the other started where it ended, with
    # nothing synced in between: no rows, and no change delivered twice.
    earlier, later = sorted(manifests, key=lambda m: m["stores"][0]["since"] is not None)
    assert earlier["row_count"] > 0 and earlier["stores"][0]["since"] is None
    assert later["row_count"] == 0
    assert later["stores"][0]["since"] == earlier["stores"][0]["snapshot"]
    assert stack.download(later["job_id"]).content == b""
