"""GET /healthz (the process answers) and GET /readyz (it can serve), outside /v1 and
without a key, for load balancers and orchestrators."""

from __future__ import annotations

import httpx
from fastapi import APIRouter
from sqlalchemy import text
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from api.deps import ReaderDep, RegistryDep, SettingsDep
from api.json import json_response
from api.openapi import problem_responses
from api.schemas import Health, Readiness
from quarry.errors import ServiceUnavailable
from registry.db import Registry
from warehouse.reader import WarehouseReader

router = APIRouter(tags=["health"])
# Readiness is polled often: a check never waits longer than this.
DAGSTER_TIMEOUT_SECONDS = 1.0


@router.get("/healthz", response_model=Health, responses=problem_responses(500))
async def healthz() -> Response:
    """Alive: the process answers. Checks nothing else, so a slow database does not get a
    healthy worker restarted."""
    return json_response({"status": "ok"})


def _registry_check(registry: Registry) -> str:
    with registry.session() as session:
        session.execute(text("SELECT 1"))
    return "ok"


def _warehouse_check(reader: WarehouseReader) -> str:
    # Reads the lake's catalog: the table's columns and its current snapshot.
    with reader.read([]) as cursor:
        cursor.execute("SELECT count(*) FROM orders").fetchone()
        cursor.execute("SELECT id FROM lake.current_snapshot()").fetchone()
    return "ok"


async def _dagster_reachable(url: str) -> bool:
    try:
        async with httpx.AsyncClient(timeout=DAGSTER_TIMEOUT_SECONDS) as client:
            response = await client.get(url.rstrip("/") + "/server_info")
    except httpx.HTTPError:
        return False
    return response.status_code < 500


@router.get("/readyz", response_model=Readiness, responses=problem_responses(500, 503))
async def readyz(settings: SettingsDep, registry: RegistryDep, reader: ReaderDep) -> Response:
    """Ready: the registry answers and the warehouse tables open (503 otherwise).
    `exports.dagster_webserver` says whether export runs can be launched right now; it is
    informational and never fails readiness, since accepted exports wait for Dagster."""
    checks: dict[str, str] = {}
    failures: list[str] = []
    for name, check, args in (
        ("registry", _registry_check, (registry,)),
        ("warehouse", _warehouse_check, (reader,)),
    ):
        try:
            checks[name] = await run_in_threadpool(check, *args)
        except Exception as exc:  # any failure of a dependency means "not ready"
            checks[name] = "unavailable"
            failures.append(f"{name}: {type(exc).__name__}")
    if failures:
        raise ServiceUnavailable("not ready: " + "; ".join(failures))
    reachable = await _dagster_reachable(settings.dagster_url)
    return json_response(
        {
            "status": "ready",
            "checks": checks,
            "exports": {"dagster_webserver": "reachable" if reachable else "unreachable"},
        }
    )
