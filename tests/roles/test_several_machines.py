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

import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.factories import wait_for
from tests.roles.deployment import RATE_LIMIT, Deployment

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("several-machines")]

FAIL_WITHIN = 90.0


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
