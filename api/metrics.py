"""Prometheus metrics at GET /metrics when QUARRY_METRICS=on (off by default). It names
every account's stores: with QUARRY_METRICS_TOKEN set only a request sending that token as
`Authorization: Bearer <token>` is answered (401 otherwise); without it, expose /metrics only
where the scraper reaches it.

- `quarry_http_requests_total{method, route, status}` and
  `quarry_http_request_duration_seconds{method, route}`: every request, by the route's
  path template (`/v1/orders/{record_id}`), never the raw path, so ids do not explode the
  series; requests no route matched count as `route="unmatched"`.
- `quarry_export_jobs{status}`: export jobs by their row's status, read at each scrape.
- `quarry_store_seconds_since_last_sync{account_id, store_id, store}`: per store, seconds
  since its last successful sync (absent before the first), read at each scrape; past
  QUARRY_METRICS_MAX_STORES stores, per account (its stalest store; `store_id` and `store`
  empty, which Prometheus reads as absent).
- The work done outside the API, from the registry's counters (quarry.measures, written
  by the processes that do it): `quarry_sync_duration_seconds{account_id, store_id,
  dataset}`, `quarry_sync_rows_total{...}`, `quarry_export_duration_seconds{format,
  destination, status}`, `quarry_failures_total{kind}` and
  `quarry_lake_write_lock_wait_seconds`. Past QUARRY_METRICS_MAX_STORES stores the store
  series are summed per account here too, whatever their writers labelled.

Each API process keeps its own counters (a registry per app): with several uvicorn workers
each scrape sees the worker that answered it; run one worker per scrape target, or sum
what the workers report.
"""

from __future__ import annotations

import hmac
import time
from collections.abc import Iterator
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import generate_latest
from prometheus_client.registry import Collector
from sqlalchemy import func, select
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api.problems import problem_response
from quarry.errors import Unauthorized
from quarry.measures import DEFINITIONS
from registry.db import Registry
from registry.measures import read_series
from registry.models import ExportJob, Store, utcnow

PATH = "/metrics"


class RegistryFacts(Collector):
    """Gauges and the shared counters, read from the registry when scraped."""

    def __init__(self, registry: Registry, max_stores: int) -> None:
        self.registry = registry
        self.max_stores = max_stores

    def collect(self) -> Iterator[Metric]:
        jobs = GaugeMetricFamily("quarry_export_jobs", "Export jobs by status.", labels=["status"])
        synced = GaugeMetricFamily(
            "quarry_store_seconds_since_last_sync",
            "Seconds since each store's last successful sync (past QUARRY_METRICS_MAX_STORES "
            "stores: its account's stalest store).",
            labels=["account_id", "store_id", "store"],
        )
        now = utcnow()
        with self.registry.session() as session:
            for status, count in session.execute(
                select(ExportJob.status, func.count()).group_by(ExportJob.status)
            ):
                jobs.add_metric([status], count)
            stores = session.execute(
                select(Store.account_id, Store.id, Store.name, Store.last_synced_at)
            ).all()
            series = read_series(session)
        per_store = len(stores) <= self.max_stores
        stalest: dict[tuple[str, str, str], float] = {}
        for account_id, store_id, name, last in stores:
            if last is None:
                continue
            key = (account_id, store_id, name) if per_store else (account_id, "", "")
            stalest[key] = max(stalest.get(key, 0.0), (now - last).total_seconds())
        for labels, seconds in sorted(stalest.items()):
            synced.add_metric(list(labels), seconds)
        yield jobs
        yield synced
        yield from shared_families(series, per_store)


def shared_families(
    series: list[tuple[str, dict[str, str], float]], per_store: bool
) -> Iterator[Metric]:
    """The registry's counters (quarry.measures) as Prometheus families, every defined one
    present (empty until something is measured); store ids dropped (and their series summed
    per account) unless `per_store`."""
    summed: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for name, labels, value in series:
        if not per_store and labels.get("store_id"):
            labels = {**labels, "store_id": ""}
        key = (name, tuple(labels.items()))
        summed[key] = summed.get(key, 0.0) + value
    for definition in DEFINITIONS.values():
        family = Metric(definition.name, definition.help, definition.kind)
        for (name, pairs), value in sorted(summed.items(), key=_exposition_order):
            if name.rsplit("_", 1)[0] != definition.name:
                continue
            family.add_sample(name, dict(pairs), value)
        yield family


def _exposition_order(item: tuple[tuple[str, tuple[tuple[str, str], ...]], float]) -> Any:
    """By series, then a histogram's buckets by their bound (as numbers: 2.5 before 10)."""
    (name, pairs), _ = item
    labels = tuple(pair for pair in pairs if pair[0] != "le")
    bound = dict(pairs).get("le")
    return (labels, name, float(bound) if bound is not None else 0.0)


class Metrics:
    """The app's metrics: a registry of its own, the request middleware's instruments."""

    def __init__(self, registry: Registry, token: str | None = None, max_stores: int = 200) -> None:
        self.token = token
        self.collectors = CollectorRegistry()
        self.requests = Counter(
            "quarry_http_requests",
            "HTTP requests by route template and status.",
            ["method", "route", "status"],
            registry=self.collectors,
        )
        self.latency = Histogram(
            "quarry_http_request_duration_seconds",
            "Time to the response's first byte, by route template.",
            ["method", "route"],
            registry=self.collectors,
        )
        self.collectors.register(RegistryFacts(registry, max_stores))

    def exposition(self, request: Request) -> Response:
        if self.token is not None and not self._token_sent(request):
            refused = Unauthorized("send QUARRY_METRICS_TOKEN as `Authorization: Bearer <token>`")
            return problem_response(refused, request.url.path)
        return Response(generate_latest(self.collectors), media_type=CONTENT_TYPE_LATEST)

    def _token_sent(self, request: Request) -> bool:
        sent = request.headers.getlist("authorization")
        if len(sent) != 1 or self.token is None:
            return False
        scheme, _, credentials = sent[0].partition(" ")
        # Constant time: the answer must not tell how much of a guess was right.
        return scheme.lower() == "bearer" and hmac.compare_digest(
            credentials.strip().encode(), self.token.encode()
        )


class MetricsMiddleware:
    """Counts and times every HTTP request by its route's path template."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def recording(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                route = getattr(scope.get("route"), "path", None) or "unmatched"
                method = scope.get("method", "")
                self.metrics.latency.labels(method, route).observe(time.perf_counter() - started)
                self.metrics.requests.labels(method, route, str(status)).inc()
            await send(message)

        await self.app(scope, receive, recording)
