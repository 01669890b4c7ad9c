"""GET /v1/export-jobs/{id}/manifest: what a job's file holds (Quarry's own addition).

The manifest (exports.files.manifest) is written with the file and kept on the job row:
dataset, columns, stores and the snapshot range read, row counts per kind of change, the
file's size and SHA-256. 409 while the job has no file yet, as the download answers.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from starlette.responses import Response

from api.deps import ExportPrincipal, NoParameters, RegistryDep, RunsDep
from api.json import json_response
from api.openapi import AUTHENTICATED, problem_responses
from exports.jobs.lifecycle import get_visible_job
from exports.jobs.listing import state_of
from quarry.errors import Conflict

router = APIRouter(prefix="/v1", tags=["exports"])


@router.get(
    "/export-jobs/{job_id}/manifest",
    response_model=dict[str, Any],
    responses=problem_responses(*AUTHENTICATED, 404, 409),
)
def get_export_manifest(
    job_id: str, principal: ExportPrincipal, registry: RegistryDep, runs: RunsDep, _: NoParameters
) -> Response:
    """The manifest of the job's file (JSON). 409 while the job has produced no file."""
    with registry.session() as session:
        job = get_visible_job(session, principal, job_id)
        manifest = job.manifest
        if manifest is None:
            state = state_of(job, runs.latest)
            if state.status == "failed":
                raise Conflict(
                    f"the job failed before writing its file: {state.error or 'no reason'}; "
                    "run the export again"
                )
            raise Conflict("the job has not produced a file yet: poll it until `file_name` is set")
    return json_response(manifest)
