"""Dependencies, declared once as Annotated aliases for the route files.

The app's long-lived objects (settings, registry, warehouse reader) are built by
create_app and kept on app.state; these hand them to routes. Dependencies without I/O are
async so that FastAPI calls them inline instead of through the thread pool.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from api.auth import authenticate, require_api, require_scope
from api.query_cache import QueryCache, app_query_cache
from pipelines.exports.runs import RunLookup
from quarry.errors import InvalidRequest
from quarry.settings import Settings
from registry.db import Registry
from registry.principals import Principal
from warehouse.query import Limits
from warehouse.reader import WarehouseReader


async def get_settings(request: Request) -> Settings:
    return request.app.state.settings


async def get_registry(request: Request) -> Registry:
    return request.app.state.registry


async def get_reader(request: Request) -> WarehouseReader:
    return request.app.state.reader


async def query_limits(settings: Annotated[Settings, Depends(get_settings)]) -> Limits:
    """The limits every query runs under, from QUARRY_QUERY_TIMEOUT_SECONDS and
    QUARRY_QUERY_MAX_GROUPS, and whether rollups may answer (QUARRY_ROLLUPS). A dependency
    of its own so that tests can lower them."""
    return Limits(
        max_groups=settings.query_max_groups,
        timeout_seconds=settings.query_timeout_seconds,
        rollups=settings.rollups,
    )


async def get_query_cache(request: Request) -> QueryCache:
    return app_query_cache(request.app)


async def get_runs(request: Request) -> RunLookup:
    """The app's reader of Dagster runs (api.main: closed with the app)."""
    runs: RunLookup = request.app.state.export_runs
    return runs


async def no_parameters(request: Request) -> None:
    """For endpoints without parameters: any query parameter is a 400 naming it, since a
    parameter that is silently ignored is a bug the client never hears about."""
    for name in request.query_params:
        message = "unknown parameter: this endpoint takes none"
        raise InvalidRequest(f"{name}: {message}", errors=[{"field": name, "message": message}])


async def no_body(request: Request) -> None:
    """For endpoints that take no request body: a body with content is a 400, since a
    client that sends one expects it to mean something. Nothing, `{}` and `null` are what
    HTTP clients send for "no body", and pass."""
    if (await request.body()).strip() not in (b"", b"{}", b"null"):
        message = "this endpoint takes no request body"
        raise InvalidRequest(f"body: {message}", errors=[{"field": "body", "message": message}])


SettingsDep = Annotated[Settings, Depends(get_settings)]
RegistryDep = Annotated[Registry, Depends(get_registry)]
ReaderDep = Annotated[WarehouseReader, Depends(get_reader)]
NoParameters = Annotated[None, Depends(no_parameters)]
NoBody = Annotated[None, Depends(no_body)]
LimitsDep = Annotated[Limits, Depends(query_limits)]
CacheDep = Annotated[QueryCache, Depends(get_query_cache)]
RunsDep = Annotated[RunLookup, Depends(get_runs)]

# The caller, by what the endpoint needs: any live key (GET /v1/account); a key on a plan
# with the API (stores, datasets); and the scope of data and export endpoints.
KeyPrincipal = Annotated[Principal, Depends(authenticate)]
ApiPrincipal = Annotated[Principal, Depends(require_api)]
ReadPrincipal = Annotated[Principal, Depends(require_scope("read_data"))]
ExportPrincipal = Annotated[Principal, Depends(require_scope("exports"))]
