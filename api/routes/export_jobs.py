"""GET /v1/export-jobs/{id} and GET /v1/export-jobs/{id}/download.

A job is visible to a key of its account that reads every store the job's file holds;
any other id answers the same 404 as an unknown one. The download streams the stored
file with its real content type; 409 while the job has no file, 404 once it was removed.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import PurePosixPath
from urllib.parse import quote

from fastapi import APIRouter
from starlette.responses import FileResponse, Response, StreamingResponse

from api.deps import ExportPrincipal, NoParameters, RegistryDep, RunsDep, SettingsDep
from api.json import json_response
from api.openapi import AUTHENTICATED, problem_responses
from exports.configs.saved import require_config
from exports.files.produce import CONTENT_TYPES
from exports.jobs.lifecycle import get_visible_job
from exports.jobs.listing import job_view
from quarry.errors import Conflict, NotFound
from quarry.files import export_files

router = APIRouter(prefix="/v1", tags=["exports"])
_NOT_TOKEN = re.compile(r'[^\x20-\x7e]|["\\]')


def content_disposition(file_name: str) -> str:
    """`attachment` with an ASCII `filename` for old clients and the exact name, UTF-8 and
    percent-encoded, in `filename*` (RFC 6266, RFC 5987)."""
    folded = unicodedata.normalize("NFKD", file_name).encode("ascii", "ignore").decode()
    fallback = _NOT_TOKEN.sub("_", folded).strip()
    suffix = PurePosixPath(file_name).suffix
    suffix = suffix if suffix.isascii() else ""
    stem = fallback.removesuffix(suffix) if suffix else fallback
    if not stem.strip("_ ."):  # nothing readable survived the folding
        fallback = "export" + suffix
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quote(file_name, safe='')}"


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
    _: NoParameters,
) -> Response:
    """The job's file, streamed. A failed delivery does not stop the download."""
    with registry.session() as session:
        job = get_visible_job(session, principal, job_id)
        file_format = require_config(session, job.config_id).format
        file_path, file_name, removed_at = job.file_path, job.file_name, job.file_removed_at
    if file_path is None or file_name is None:
        raise Conflict("the job has not produced a file yet: poll it until `file_name` is set")
    files = export_files(settings)
    size = None if removed_at is not None else files.size(file_path)
    if size is None:
        when = f" on {removed_at:%Y-%m-%d}" if removed_at else ""
        raise NotFound(
            f"the file of this job was removed{when} (its store re-synced or was removed); "
            "run the export again for a new file"
        )
    headers = {"Content-Disposition": content_disposition(file_name)}
    local = files.local_path(file_path)
    if local is not None:
        return FileResponse(local, media_type=CONTENT_TYPES[file_format], headers=headers)
    # In the object store: streamed through, never staged on this role's disk.
    return StreamingResponse(
        files.chunks(file_path),
        media_type=CONTENT_TYPES[file_format],
        headers=headers | {"Content-Length": str(size)},
    )
