"""GET /v1/exports, POST /v1/exports/{id}/run, and Quarry's own pause and resume of a
configuration's schedule.

A key sees a configuration only when every store it reads is one of the key's stores; any
other id answers the same 404 as an unknown one. A run writes the job row first, answers
202, then submits the Dagster run through GraphQL; when Dagster does not answer, the job
stays queued and the reconciler submits it later.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, BackgroundTasks, Header
from starlette.responses import Response

from api.deps import ExportPrincipal, NoBody, NoParameters, RegistryDep, RunsDep, SettingsDep
from api.json import json_response
from api.openapi import AUTHENTICATED, problem_responses
from api.schemas import ExportDetail, ExportList, RunAccepted
from exports.configs.definition import schedule_only_reason
from exports.configs.saved import get_visible_config, reset_changes, set_schedule_paused
from exports.jobs.lifecycle import MAX_IDEMPOTENCY_KEY, QUEUED, check_idempotency_key, create_job
from exports.jobs.listing import config_view, config_views
from pipelines.exports.launcher import launch
from quarry.errors import UnprocessableExport

router = APIRouter(prefix="/v1", tags=["exports"])
# What check_idempotency_key accepts, in the schema only: the header is checked after the
# key, as every request is (FastAPI would check it first).
IDEMPOTENCY_KEY_SCHEMA = {
    "minLength": 1,
    "maxLength": MAX_IDEMPOTENCY_KEY,
    "pattern": "^[\\x21-\\x7e][\\x20-\\x7e]*$",
}


@router.get("/exports", response_model=ExportList, responses=problem_responses(*AUTHENTICATED))
def list_exports(
    principal: ExportPrincipal, registry: RegistryDep, runs: RunsDep, _: NoParameters
) -> Response:
    """Export configurations the key may see: `{data: [...]}` with each one's last run."""
    with registry.session() as session:
        views = config_views(session, principal.account_id, runs.latest, principal)
    return json_response({"data": views})


@router.post(
    "/exports/{config_id}/run",
    status_code=202,
    response_model=RunAccepted,
    responses={
        **problem_responses(*AUTHENTICATED, 404, 422),
        202: {
            "description": "Accepted: the job is queued.",
            "headers": {
                "Location": {
                    "description": "The job to poll: /v1/export-jobs/{job_id}.",
                    "required": True,
                    "schema": {"type": "string"},
                }
            },
        },
    },
)
def run_export(
    config_id: str,
    principal: ExportPrincipal,
    settings: SettingsDep,
    registry: RegistryDep,
    background: BackgroundTasks,
    _: NoParameters,
    __: NoBody,
    idempotency_key: Annotated[
        str | None,
        Header(alias="Idempotency-Key", json_schema_extra=IDEMPOTENCY_KEY_SCHEMA),
    ] = None,
) -> Response:
    """Start a job of the configuration: 202 with `{job_id, status: "queued"}`. The same
    Idempotency-Key for the same configuration within 24 hours answers the first job."""
    key = check_idempotency_key(idempotency_key)
    with registry.session() as session:
        config = get_visible_config(session, principal, config_id)
        reason = schedule_only_reason(config)
        if reason is not None:
            raise UnprocessableExport(reason)
        job, created = create_job(session, config, idempotency_key=key, api_key_id=principal.key_id)
        job_id, config_name = job.id, config.name
    if created:
        # After the response: a slow or absent Dagster never delays the 202.
        background.add_task(launch, settings, registry, job_id, config_name)
    response = json_response(
        {"job_id": job_id, "status": QUEUED},
        status_code=202,
        headers={"Location": f"/v1/export-jobs/{job_id}"},
    )
    if not created:
        response.headers["Idempotent-Replayed"] = "true"
    return response


@router.get(
    "/exports/{config_id}",
    response_model=ExportDetail,
    responses=problem_responses(*AUTHENTICATED, 404),
)
def get_export(
    config_id: str,
    principal: ExportPrincipal,
    registry: RegistryDep,
    runs: RunsDep,
    _: NoParameters,
) -> Response:
    """One configuration: its columns, filters, format, destination kind and settings
    (never credentials) and schedule, with its last run. Another account's id, or one
    reading a store the key cannot, answers the same 404 as an unknown one."""
    with registry.session() as session:
        config = get_visible_config(session, principal, config_id)
        view = config_view(session, config, runs.latest, principal.config_store_ids(config))
    return json_response(view)


def _set_paused(
    config_id: str, paused: bool, principal: ExportPrincipal, registry: RegistryDep, runs: RunsDep
) -> Response:
    with registry.session() as session:
        config = get_visible_config(session, principal, config_id)
        set_schedule_paused(session, config.id, paused)
        view = config_view(session, config, runs.latest, principal.config_store_ids(config))
    return json_response(view)


@router.post(
    "/exports/{config_id}/pause",
    response_model=ExportDetail,
    responses=problem_responses(*AUTHENTICATED, 404, 409),
)
def pause_export(
    config_id: str,
    principal: ExportPrincipal,
    registry: RegistryDep,
    runs: RunsDep,
    _: NoParameters,
    __: NoBody,
) -> Response:
    """Quarry's own: pause the configuration's schedule (idempotent); it answers the
    configuration, `schedule.paused` true. A paused export still runs through
    POST /v1/exports/{id}/run. 409 when it has no schedule."""
    return _set_paused(config_id, True, principal, registry, runs)


@router.post(
    "/exports/{config_id}/resume",
    response_model=ExportDetail,
    responses=problem_responses(*AUTHENTICATED, 404),
)
def resume_export(
    config_id: str,
    principal: ExportPrincipal,
    registry: RegistryDep,
    runs: RunsDep,
    _: NoParameters,
    __: NoBody,
) -> Response:
    """Quarry's own: resume the configuration's schedule (idempotent): its next tick runs
    it (missed ticks are not caught up)."""
    return _set_paused(config_id, False, principal, registry, runs)


@router.post(
    "/exports/{config_id}/reset",
    response_model=ExportDetail,
    responses=problem_responses(*AUTHENTICATED, 404, 409),
)
def reset_export(
    config_id: str,
    principal: ExportPrincipal,
    registry: RegistryDep,
    runs: RunsDep,
    _: NoParameters,
    __: NoBody,
) -> Response:
    """Quarry's own: a changed-rows configuration starts over, its next run delivering
    every row (`quarry exports reset`). 409 for a configuration of `rows: all`, or while
    one of its jobs is queued or running."""
    with registry.session() as session:
        config = get_visible_config(session, principal, config_id)
        reset_changes(session, config.id)
        view = config_view(session, config, runs.latest, principal.config_store_ids(config))
    return json_response(view)
