"""GET /v1/export-jobs/{id} and GET /v1/export-jobs/{id}/download.

A job is visible to a key of its account that reads every store the job's file holds;
any other id answers the same 404 as an unknown one. The download streams the stored
file with its real content type; 409 while the job has no file, 404 once it was removed.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import Response

from api.deps import ExportPrincipal, NoParameters, RegistryDep, RunsDep, SettingsDep
from api.job_files import job_file_response
from api.json import json_response
from api.openapi import AUTHENTICATED, problem_responses
from api.schemas import FILE_SCHEMA, ExportJobPage, ExportJobView
from exports.configs.saved import get_visible_config, require_config
from exports.files.formats import CONTENT_TYPES
from exports.jobs.lifecycle import JOB_STATUSES, get_visible_job
from exports.jobs.listing import job_history, job_view, state_of
from warehouse.record_filters import invalid
from warehouse.records import MAX_PAGE, MAX_PAGE_SIZE, whole_number

router = APIRouter(prefix="/v1", tags=["exports"])


JOB_LIST_PARAMETERS = ("export_id", "status", "page", "page_size")


def _parameter(name: str, description: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": name,
        "in": "query",
        "required": False,
        "description": description,
        "schema": schema,
    }


# Written out rather than declared on the function, so the schema says what the parsing
# below accepts (paging as the record lists: whole numbers in range), no more, no less.
_JOB_LIST_SCHEMA = [
    _parameter("export_id", "Jobs of this configuration.", {"type": "string", "minLength": 1}),
    _parameter("status", "Jobs in this state.", {"type": "string", "enum": list(JOB_STATUSES)}),
    _parameter(
        "page",
        "1-based page.",
        {"type": "integer", "minimum": 1, "maximum": MAX_PAGE, "default": 1},
    ),
    _parameter(
        "page_size",
        "Jobs per page.",
        {"type": "integer", "minimum": 1, "maximum": MAX_PAGE_SIZE, "default": 50},
    ),
]


@router.get(
    "/export-jobs",
    response_model=ExportJobPage,
    responses=problem_responses(*AUTHENTICATED, 404),
    openapi_extra={"parameters": _JOB_LIST_SCHEMA},
)
def list_export_jobs(
    request: Request,
    principal: ExportPrincipal,
    registry: RegistryDep,
    runs: RunsDep,
) -> Response:
    """The run history of the key's account, newest first: `{data, page, page_size,
    has_more}` paged as the record lists are, narrowed by `export_id` and `status` (the
    status the API shows). Jobs holding a store the key cannot read are left out."""
    seen: set[str] = set()
    for name, _ in request.query_params.multi_items():
        if name not in JOB_LIST_PARAMETERS:
            raise invalid(name, f"unknown parameter: takes {', '.join(JOB_LIST_PARAMETERS)}")
        if name in seen:
            raise invalid(name, "given more than once")
        seen.add(name)
    export_id = request.query_params.get("export_id")
    status = request.query_params.get("status")
    page = request.query_params.get("page")
    page_size = request.query_params.get("page_size")
    if export_id == "":
        raise invalid("export_id", "must not be empty")
    if status is not None and status not in JOB_STATUSES:
        raise invalid("status", f"must be one of {', '.join(JOB_STATUSES)}, got {status!r}")
    page_number = whole_number("1" if page is None else page, "page", MAX_PAGE)
    size = whole_number("50" if page_size is None else page_size, "page_size", MAX_PAGE_SIZE)
    with registry.session() as session:
        if export_id is not None:
            get_visible_config(session, principal, export_id)
        history = job_history(
            session,
            principal,
            runs.latest,
            export_id=export_id,
            status=status,
            page=page_number,
            page_size=size,
        )
    return json_response(asdict(history))


@router.get(
    "/export-jobs/{job_id}",
    response_model=ExportJobView,
    responses=problem_responses(*AUTHENTICATED, 404),
)
def get_export_job(
    job_id: str, principal: ExportPrincipal, registry: RegistryDep, runs: RunsDep, _: NoParameters
) -> Response:
    """The job: `status` (queued, running, completed, failed), `file_name` once its file
    exists, `error` when it failed. Poll every 15 to 30 seconds."""
    with registry.session() as session:
        job = get_visible_job(session, principal, job_id)
        view = job_view(job, require_config(session, job.config_id), runs.latest)
    return json_response(view)


@router.get(
    "/export-jobs/{job_id}/download",
    responses={
        **problem_responses(*AUTHENTICATED, 404, 409, 416),
        200: {
            "description": "The file.",
            "content": {t: {"schema": FILE_SCHEMA} for t in CONTENT_TYPES.values()},
        },
    },
    response_class=Response,
)
def download_export(
    job_id: str,
    principal: ExportPrincipal,
    settings: SettingsDep,
    registry: RegistryDep,
    runs: RunsDep,
    _: NoParameters,
) -> Response:
    """The job's file, streamed. A failed delivery does not stop the download."""
    with registry.session() as session:
        job = get_visible_job(session, principal, job_id)
        file_format = require_config(session, job.config_id).format
        session.expunge(job)
    return job_file_response(settings, job, state_of(job, runs.latest), file_format)
