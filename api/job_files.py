"""Serving an export job's file: the one code path for the keyed download
(GET /v1/export-jobs/{id}/download) and the signed link an email carries
(GET /v1/downloads/{token})."""

from __future__ import annotations

import re
import unicodedata
from pathlib import PurePosixPath
from urllib.parse import quote

from starlette.responses import FileResponse, MalformedRangeHeader, Response, StreamingResponse
from starlette.responses import RangeNotSatisfiable as StarletteRangeNotSatisfiable

from exports.files.cleanup import REMOVAL_REASONS
from exports.files.formats import CONTENT_TYPES
from exports.jobs.state import JobState
from quarry.errors import Conflict, NotFound, RangeNotSatisfiable
from quarry.files import export_files
from quarry.settings import Settings
from registry.models import ExportJob

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


class _WholeFileUnlessRanged(FileResponse):
    """A file on this disk, served in byte ranges when asked in a Range header it can read,
    whole otherwise. Starlette answers a Range it cannot parse (`bytes=abc`, a unit other
    than bytes) with a 400 in plain text; RFC 9110 (14.2) lets a server ignore such a header
    and requires it for an unknown unit, and the client then gets the whole file, as from
    the object store, whose stream ignores Range. A range past the end is a 416, raised as
    a problem (Starlette's own 416 has an empty plain-text body): the response has not
    started when the header is parsed, so the API's error handler renders it."""

    @classmethod
    def _parse_range_header(cls, http_range: str, file_size: int) -> list[tuple[int, int]]:
        try:
            return super()._parse_range_header(http_range, file_size)
        except MalformedRangeHeader:
            return []  # no ranges: the whole file, 200
        except StarletteRangeNotSatisfiable as exc:
            raise RangeNotSatisfiable(
                f"the range {http_range!r} starts past the end of the file "
                f"({file_size} bytes); ask for bytes 0-{max(file_size - 1, 0)} or none",
                size=file_size,
            ) from exc


def job_file_response(
    settings: Settings, job: ExportJob, state: JobState, file_format: str
) -> Response:
    """The job's file, streamed with its real content type. 409 while it has none (saying
    why when the job failed), 404 once it was removed."""
    if job.file_path is None or job.file_name is None:
        if state.status == "failed":
            raise Conflict(
                f"the job failed and has no file: {state.error or 'no reason recorded'}; "
                "run the export again"
            )
        raise Conflict("the job has not produced a file yet: poll it until `file_name` is set")
    files = export_files(settings)
    removed_at = job.file_removed_at
    size = None if removed_at is not None else files.size(job.file_path)
    if size is None:
        when = f" on {removed_at:%Y-%m-%d}" if removed_at else ""
        why = REMOVAL_REASONS.get(job.file_removed_reason or "")
        if why is None:  # removed before reasons were recorded, or gone from the store
            why = "retention, or a store it holds was re-synced or removed"
        raise NotFound(
            f"the file of this job was removed{when} ({why}); run the export again for a new file"
        )
    headers = {"Content-Disposition": content_disposition(job.file_name)}
    local = files.local_path(job.file_path)
    if local is not None:
        return _WholeFileUnlessRanged(local, media_type=CONTENT_TYPES[file_format], headers=headers)
    # In the object store: streamed through, never staged on this role's disk.
    return StreamingResponse(
        files.chunks(job.file_path),
        media_type=CONTENT_TYPES[file_format],
        headers=headers | {"Content-Length": str(size)},
    )
