"""Prometheus metrics at GET /metrics when QUARRY_METRICS=on (off by default). It names
every account's stores: with QUARRY_METRICS_TOKEN set only a request sending that token as
`Authorization: Bearer <token>` is answered (401 otherwise); without it, expose /metrics only
where the scraper reaches it.

- `quarry_http_requests_total{method, route, status}` and
  `quarry_http_request_duration_seconds{method, route}`: every request, by the route's
  path template (`/v1/orders/{record_id}`), never the raw path, so ids do not explode the
  series; requests no route matched count as `route="unmatched"`.
- `quarry_export_jobs{status}`: export jobs by their row's status, read at each scrape.
- `quarry_store_seconds_since_last_sync{store_id, store}`: per store, seconds since its
  last successful sync (absent before the first), read at each scrape.

Each API process keeps its own counters (a registry per app): with several uvicorn workers
each scrape sees the worker that answered it; run one worker per scrape target, or sum
what the workers report.
"""

from __future__ import annotations

import hmac
import time
from collections.abc import Iterator

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
from registry.db import Registry
from registry.models import ExportJob, Store, utcnow

PATH = "/metrics"


class RegistryFacts(Collector):
    """Gauges read from the registry when scraped."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry

    def collect(self) -> Iterator[Metric]:
        jobs = GaugeMetricFamily("quarry_export_jobs", "Export jobs by status.", labels=["status"])
        synced = GaugeMetricFamily(
            "quarry_store_seconds_since_last_sync",
            "Seconds since each store's last successful sync.",
            labels=["store_id", "store"],
        )
        now = utcnow()
        with self.registry.session() as session:
            for status, count in session.execute(
                select(ExportJob.status, func.count()).group_by(ExportJob.status)
            ):
                jobs.add_metric([status], count)
            for store_id, name, last in session.execute(
                select(Store.id, Store.name, Store.last_synced_at)
            ):
                if last is not None:
                    synced.add_metric([store_id, name], (now - last).total_seconds())
        yield jobs
        yield synced


class Metrics:
    """The app's metrics: a registry of its own, the request middleware's instruments."""

    def __init__(self, registry: Registry, token: str | None = None) -> None:
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
        self.collectors.register(RegistryFacts(registry))

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
