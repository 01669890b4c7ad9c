"""GET /v1/downloads/{token}: the file behind a signed link in an export email.

The one /v1 path without an API key: the token's signature and expiry are the authority
(destinations/signed_links.py), so a recipient without a key can follow the link. A
malformed, forged or unknown token answers 404, one past its expiry 410, both
problem+json; a genuine link to a file since removed answers 404 like the keyed download.
"""

from __future__ import annotations

from fastapi import APIRouter
from starlette.responses import Response

from api.deps import NoParameters, RegistryDep, RunsDep, SettingsDep
from api.job_files import job_file_response
from api.openapi import problem_responses
from api.schemas import FILE_SCHEMA
from destinations.signed_links import InvalidLink, verify_download_token
from exports.configs.saved import require_config
from exports.files.formats import CONTENT_TYPES
from exports.jobs.listing import state_of
from registry.models import ExportJob

router = APIRouter(prefix="/v1", tags=["exports"])


@router.get(
    "/downloads/{token}",
    responses={
        **problem_responses(400, 404, 409, 410, 416, 500),
        200: {
            "description": "The file.",
            "content": {t: {"schema": FILE_SCHEMA} for t in CONTENT_TYPES.values()},
        },
    },
    response_class=Response,
    summary="Download an export file through a signed link",
)
def download_by_link(
    token: str, settings: SettingsDep, registry: RegistryDep, runs: RunsDep, _: NoParameters
) -> Response:
    """The export file a signed link names, streamed; no API key."""
    job_id = verify_download_token(settings, token)
    with registry.session() as session:
        job = session.get(ExportJob, job_id)
        if job is None:
            raise InvalidLink(detail="download link is not valid")
        file_format = require_config(session, job.config_id).format
        session.expunge(job)
    return job_file_response(settings, job, state_of(job, runs.latest), file_format)
