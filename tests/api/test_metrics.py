"""GET /metrics (Prometheus) when QUARRY_METRICS=on: requests by route template and status
with latencies, export jobs by status, seconds since each store's last sync; absent when
off."""

from __future__ import annotations

from typing import Any

from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import func, select

from registry.models import ExportJob
from tests.api.conftest import Client, assert_problem
from tests.api.world import World
from tests.exports.conftest import apply_yaml


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
