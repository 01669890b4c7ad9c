"""The app factory. `uvicorn --factory api.main:create_app` (what `quarry serve` runs)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import APIRouter, FastAPI

from api.body_limit import BodyLimitMiddleware
from api.console import install_console
from api.docs_page import install_docs
from api.head import HeadAsGetMiddleware
from api.logs import mask_keys
from api.metrics import PATH as METRICS_PATH
from api.metrics import Metrics, MetricsMiddleware
from api.middleware import ResponseHeadersMiddleware
from api.openapi import build_openapi
from api.problems import install_problem_handlers
from api.ratelimit import build_limiter
from api.request_ids import install as install_request_ids
from api.routes import (
    account,
    datasets,
    downloads,
    export_jobs,
    exports,
    exports_manifest,
    graphql,
    health,
    query,
    records,
    shopify_webhooks,
    stores,
)
from pipelines.exports.runs import RunLookup
from quarry import logs
from quarry.settings import Settings, load_settings
from registry.db import Registry
from warehouse.reader import WarehouseReader

# Every router, in one place: the query and export routers join this list. Record routes
# are fixed paths per dataset (/v1/orders, ...), so the order here does not matter.
ROUTERS: tuple[APIRouter, ...] = (
    health.router,
    account.router,
    stores.router,
    datasets.router,
    records.router,
    query.router,
    exports.router,
    export_jobs.router,
    exports_manifest.router,
    downloads.router,
    shopify_webhooks.router,
    graphql.router,
)

DESCRIPTION = """Records, aggregate queries and exports of the stores of one account.

Every /v1 request carries `Authorization: Bearer <key>`, except a signed download link
(/v1/downloads/{token}, from an export email). Every error is an RFC 7807
problem (`application/problem+json`). See docs/api.md for parameter formats and limits."""


def create_app(settings: Settings | None = None) -> FastAPI:
    """The API over `settings` (read from the environment when None).

    Builds the registry (migrated once, here, not per request), the warehouse reader and
    the rate limiter; a bad setting fails here with a ConfigurationError. Built from the
    environment, as uvicorn builds it, the app is the process's: it sets up the process's
    logs (quarry.logs); a program that passes its own settings keeps its own logging."""
    owns_process = settings is None
    settings = settings or load_settings()
    limiter = build_limiter(settings)
    registry = Registry(settings)
    reader = WarehouseReader.serving(settings, registry)
    # Opens the Dagster instance on first use: most requests never need it.
    export_runs = RunLookup(settings)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        yield
        # Only what reopens on demand: an app may see several lifespans (test clients), and
        # the reader's in-memory DuckDB goes with the process anyway.
        registry.dispose()
        export_runs.close()
        if limiter is not None:
            limiter.close()

    app = FastAPI(
        title="Quarry",
        version="1",
        description=DESCRIPTION,
        lifespan=lifespan,
        # /docs is api.docs_page's: Swagger UI from an installed package, not a CDN.
        docs_url=None,
        redoc_url=None,
        # /v1/orders/ is not /v1/orders: a 404 problem, not a redirect to a Location built
        # from the client's Host header.
        redirect_slashes=False,
    )
    app.state.settings = settings
    app.state.registry = registry
    app.state.reader = reader
    app.state.limiter = limiter
    app.state.export_runs = export_runs
    install_problem_handlers(app)
    # The last added runs first: a refused body still gets the headers of every response.
    app.add_middleware(HeadAsGetMiddleware, router=app.router)
    app.add_middleware(BodyLimitMiddleware, max_body_bytes=settings.max_body_bytes)
    app.add_middleware(ResponseHeadersMiddleware)
    if settings.metrics:
        metrics = Metrics(registry, settings.metrics_token, settings.metrics_max_stores)
        # Outermost: every request is counted, refusals of the other middleware too.
        app.add_middleware(MetricsMiddleware, metrics=metrics)
        app.add_route(METRICS_PATH, metrics.exposition, include_in_schema=False)
    install_docs(app)
    # Quarry's addition: the web console under /console (docs/console.md).
    install_console(app)
    for router in ROUTERS:
        app.include_router(router)
    app.openapi = lambda: build_openapi(app)  # type: ignore[method-assign]
    mask_keys()
    install_request_ids()
    if owns_process:
        logs.configure(settings, default_level="INFO")
        logs.configure_uvicorn(settings)
    return app
