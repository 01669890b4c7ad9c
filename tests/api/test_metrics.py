"""GET /metrics (Prometheus) when QUARRY_METRICS=on: requests by route template and status
with latencies, export jobs by status, seconds since each store's last sync; absent when
off."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import func, select

from pipelines.sync.measured import measured_step
from platforms.base import IncompleteSync
from registry.models import ExportJob
from tests.api.conftest import Client, assert_problem
from tests.api.world import World
from tests.exports.conftest import apply_yaml, run_config


def _samples(client: Client) -> dict[str, list[Any]]:
    response = client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    families: dict[str, list[Any]] = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            families.setdefault(sample.name, []).append(sample)
    return families


def test_metrics_are_off_by_default(client: Client) -> None:
    assert client.get("/metrics").status_code == 404


def test_requests_jobs_and_syncs_are_measured(make_client: Any, world: World) -> None:
    client: Client = make_client(metrics=True)
    key = world.keys["a_all"]
    (config_id,) = apply_yaml(
        world, "a", {"exports": [{"name": "Metrics job", "entity_type": "orders", "format": "csv"}]}
    ).values()
    assert client.request("POST", f"/v1/exports/{config_id}/run", key=key).status_code == 202
    for _ in range(3):
        assert client.get("/v1/orders/ord_nope_1", key=key).status_code == 404
    assert client.get("/v1/stores", key=key).status_code == 200
    assert client.get("/v1/stores").status_code == 401
    client.get("/nowhere/at/all")
    samples = _samples(client)

    counts = {
        (s.labels["method"], s.labels["route"], s.labels["status"]): s.value
        for s in samples["quarry_http_requests_total"]
    }
    # By template, never the raw path: ids do not make new series.
    assert counts[("GET", "/v1/orders/{record_id}", "404")] == 3
    assert counts[("GET", "/v1/stores", "200")] == 1
    assert counts[("GET", "/v1/stores", "401")] == 1
    assert counts[("GET", "unmatched", "404")] == 1
    assert not any("ord_nope" in route for _, route, _ in counts)
    buckets = [
        s for s in samples["quarry_http_request_duration_seconds_count"]
        if s.labels["route"] == "/v1/stores"
    ]  # fmt: skip
    assert buckets and buckets[0].value == 2

    since = {s.labels["store_id"]: s.value for s in samples["quarry_store_seconds_since_last_sync"]}
    assert since["st_a1"] > 0  # the world marks st_a1 synced in the past
    with world.registry.session() as session:
        expected = dict(
            session.execute(select(ExportJob.status, func.count()).group_by(ExportJob.status)).all()
        )
    jobs = {s.labels["status"]: s.value for s in samples.get("quarry_export_jobs", [])}
    assert jobs == expected and jobs["queued"] >= 1


def test_a_metrics_token_keeps_the_store_names_private(make_client: Any, world: World) -> None:
    client: Client = make_client(metrics=True, metrics_token="scrape-me-0123456789")
    for refused in (
        client.get("/metrics"),
        client.get("/metrics", key="scrape-me-wrong-456789"),
        client.get("/metrics", key=world.keys["a_all"]),  # an API key is not the token
        client.get("/metrics", headers={"Authorization": "Basic scrape-me-0123456789"}),
    ):
        body = assert_problem(refused, 401, "Unauthorized")
        assert refused.headers["www-authenticate"] == "Bearer"
        assert "QUARRY_METRICS_TOKEN" in body["detail"] and "st_a1" not in refused.text
    answered = client.get("/metrics", key="scrape-me-0123456789")
    assert answered.status_code == 200 and "quarry_store_seconds_since_last_sync" in answered.text


# Delivery fails at once: the password's variable is not set where the run executes.
UNDELIVERABLE = {
    "kind": "email",
    "settings": {"host": "mail.quarry.invalid", "from_address": "exports@example.com",
                 "to": ["buyer@example.com"]},
    "credentials": {"username": "exports", "password": {"env": "METRICS_TEST_SMTP_PASSWORD"}},
}  # fmt: skip


def _values(client: Client) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for samples in _samples(client).values()
        for s in samples
    }


def _delta(before: dict[Any, float], after: dict[Any, float], name: str, **labels: str) -> float:
    key = (name, tuple(sorted(labels.items())))
    return after.get(key, 0.0) - before.get(key, 0.0)


def test_work_outside_the_api_is_measured_with_bounded_labels(
    make_client: Any, world: World
) -> None:
    """Export jobs and sync steps (run in this process, as a worker runs them) add to the
    registry's counters; /metrics shows them, per store up to QUARRY_METRICS_MAX_STORES
    stores and per account past it, never per job."""
    client: Client = make_client(metrics=True)
    configs = apply_yaml(world, "a", {"exports": [
        {"name": "Measured export", "entity_type": "orders", "format": "csv"},
        {"name": "Measured failure", "entity_type": "orders", "format": "csv",
         "destination": UNDELIVERABLE},
    ]})  # fmt: skip
    before = _values(client)
    done, failure = run_config(world, configs["Measured export"])
    assert failure is None
    failed, reason = run_config(world, configs["Measured failure"], environ={})
    assert reason and "METRICS_TEST_SMTP_PASSWORD" in reason
    with measured_step(world.registry, "st_a1", "orders", 200) as figures:
        figures.rows = 7
    with (
        pytest.raises(IncompleteSync),
        measured_step(world.registry, "st_a2", "customers", 200),
    ):
        raise IncompleteSync("the platform counted 3 more")
    after = _values(client)

    export = {"format": "csv", "destination": "local", "status": "completed"}
    assert _delta(before, after, "quarry_export_duration_seconds_count", **export) == 1
    assert _delta(before, after, "quarry_export_duration_seconds_bucket", le="+Inf", **export) == 1
    refused = {"format": "csv", "destination": "email", "status": "failed"}
    assert _delta(before, after, "quarry_export_duration_seconds_count", **refused) == 1
    assert _delta(before, after, "quarry_failures_total", kind="export_delivery") == 1
    assert _delta(before, after, "quarry_failures_total", kind="sync_incomplete") == 1
    store = {"account_id": world.accounts["a"], "store_id": "st_a1", "dataset": "orders"}
    assert _delta(before, after, "quarry_sync_rows_total", **store) == 7
    assert _delta(before, after, "quarry_sync_duration_seconds_count", **store) == 1
    assert after[("quarry_lake_write_lock_wait_seconds_count", ())] > 0
    text = client.get("/metrics").text
    assert done not in text and failed not in text  # never a job id

    # Past the documented number of stores: per account, the same totals.
    capped: Client = make_client(metrics=True, metrics_max_stores=1)
    summed = _values(capped)
    account_a = {"account_id": world.accounts["a"], "store_id": "", "dataset": "orders"}
    per_store = sum(
        value for (name, labels), value in after.items()
        if name == "quarry_sync_rows_total"
        and dict(labels).get("account_id") == world.accounts["a"]
        and dict(labels)["dataset"] == "orders"
    )  # fmt: skip
    assert summed[("quarry_sync_rows_total", tuple(sorted(account_a.items())))] == per_store
    assert not any(dict(labels).get("store_id") for _, labels in summed)
    stalest = [s for s in _samples(capped)["quarry_store_seconds_since_last_sync"]]
    assert stalest and {s.labels["store_id"] for s in stalest} == {""}
    assert {s.labels["account_id"] for s in stalest} <= set(world.accounts.values())
