"""GET /v1/export-jobs/{id} and GET /v1/export-jobs/{id}/download.

A job is visible to a key of its account that reads every store the job's file holds;
any other id answers the same 404 as an unknown one. The download streams the stored
file with its real content type; 409 while the job has no file, 404 once it was removed.
"""

from __future__ import annotations

from fastapi import APIRouter
from starlette.responses import Response

from api.deps import ExportPrincipal, NoParameters, RegistryDep, RunsDep, SettingsDep
from api.job_files import job_file_response
from api.json import json_response
from api.openapi import AUTHENTICATED, problem_responses
from exports.configs.saved import require_config
from exports.files.produce import CONTENT_TYPES
from exports.jobs.lifecycle import get_visible_job
from exports.jobs.listing import job_view, state_of

router = APIRouter(prefix="/v1", tags=["exports"])


@router.get("/export-jobs/{job_id}", responses=problem_responses(*AUTHENTICATED, 404))
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
        **problem_responses(*AUTHENTICATED, 404, 409),
        200: {"description": "The file.", "content": {t: {} for t in CONTENT_TYPES.values()}},
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
