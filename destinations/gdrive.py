"""Google Drive delivery: a resumable upload into a folder shared with a service account.

A resumable upload creates the file only when its last byte arrives, so a partial file
never appears (Drive's equivalent of a temporary name and rename). A connection lost in the
middle of a chunk is resumed from what the server says it holds, not restarted. The job id
is stored in the file's appProperties: a retry of the same job finds its own file and
uploads a new revision of it instead of adding a duplicate; other files are never touched.
"""

from __future__ import annotations

import re
import time
from typing import Any, BinaryIO, ClassVar
from urllib.parse import urlsplit

import httpx

from destinations.base import Delivery, DeliveryError, Receipt
from destinations.fields import FieldReader
from destinations.google_auth import GoogleSession, api_error, read_google_settings
from destinations.google_destination import GoogleDestination
from quarry.settings import Settings

DEFAULT_API_BASE = "https://www.googleapis.com"
DRIVE_SCOPE = "https://www.googleapis.com/auth/drive"
FILE_FIELDS = "id,name,size,sha256Checksum,webViewLink"
JOB_PROPERTY = "quarryJobId"
_FOLDER_ID = re.compile(r"^[A-Za-z0-9_-]{5,200}$")


def _quote(value: str) -> str:
    """A string literal in Drive's query language."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


class GoogleDriveDestination(GoogleDestination):
    kind: ClassVar[str] = "google_drive"
    scope: ClassVar[str] = DRIVE_SCOPE
    service: ClassVar[str] = "Drive"

    @classmethod
    def _read_settings(cls, fields: FieldReader, app_settings: Settings) -> dict[str, Any]:
        folder_id = fields.text("folder_id", required=True, max_length=200)
        chunk_kib = fields.integer("chunk_size_kib", default=8192, minimum=256, maximum=262_144)
        common = read_google_settings(
            fields, app_settings.allow_private_hosts, default_api_base=DEFAULT_API_BASE
        )
        if folder_id and not fields.has_error("folder_id") and not _FOLDER_ID.match(folder_id):
            fields.error("folder_id", "must be a Drive folder id (the last part of its address)")
        if chunk_kib % 256:
            fields.error("chunk_size_kib", "must be a multiple of 256")
        return {"folder_id": folder_id, "chunk_size_kib": chunk_kib, **common}

    def target(self) -> str:
        return f"folder {self.settings['folder_id']}"

    def _shared_item(self) -> str:
        return f"folder {self.settings['folder_id']}"

    def _deliver_once(self, delivery: Delivery, size: int, sha256: str) -> Receipt:
        api = self._session()
        existing = self._find_own_file(api, delivery)
        session_uri = self._start_upload(api, delivery, size, existing)
        with delivery.path.open("rb") as source:
            resource = self._upload(api, session_uri, source, size)
        if "size" in resource and int(resource["size"]) != size:
            raise DeliveryError(f"Drive stored {resource['size']} of {size} bytes", transient=True)
        stored_sha = resource.get("sha256Checksum")
        if stored_sha and stored_sha != sha256:
            raise DeliveryError("Drive's SHA-256 of the file differs from ours", transient=True)
        file_id = str(resource.get("id", ""))
        location = resource.get("webViewLink") or f"https://drive.google.com/file/d/{file_id}/view"
        return Receipt(
            kind=self.kind,
            location=str(location),
            bytes=size,
            sha256=sha256,
            details={"file_id": file_id, "replaced": "yes" if existing else "no"},
        )

    def _find_own_file(self, api: GoogleSession, delivery: Delivery) -> str | None:
        """The id of the file this job uploaded before (a retry), if any."""
        query = " and ".join(
            [
                f"{_quote(self.settings['folder_id'])} in parents",
                f"appProperties has {{ key={_quote(JOB_PROPERTY)} and "
                f"value={_quote(delivery.job_id)} }}",
                f"name = {_quote(delivery.file_name)}",
                "trashed = false",
            ]
        )
        response = api.request(
            "GET",
            f"{self.settings['api_base_url']}/drive/v3/files",
            params={
                "q": query,
                "fields": "files(id,name)",
                "pageSize": "10",
                "corpora": "allDrives",
                "supportsAllDrives": "true",
                "includeItemsFromAllDrives": "true",
            },
        )
        if response.status_code != 200:
            raise self._refused(api_error(response))
        files = response.json().get("files") or []
        return str(files[0]["id"]) if files else None

    def _start_upload(
        self, api: GoogleSession, delivery: Delivery, size: int, existing: str | None
    ) -> str:
        base = self.settings["api_base_url"]
        params = {"uploadType": "resumable", "supportsAllDrives": "true", "fields": FILE_FIELDS}
        headers = {
            "X-Upload-Content-Type": delivery.content_type or "application/octet-stream",
            "X-Upload-Content-Length": str(size),
        }
        metadata: dict[str, Any] = {"name": delivery.file_name, "mimeType": delivery.content_type}
        if existing:
            response = api.request(
                "PATCH",
                f"{base}/upload/drive/v3/files/{existing}",
                params=params,
                json=metadata,
                headers=headers,
            )
        else:
            metadata["parents"] = [self.settings["folder_id"]]
            metadata["appProperties"] = {JOB_PROPERTY: delivery.job_id}
            response = api.request(
                "POST",
                f"{base}/upload/drive/v3/files",
                params=params,
                json=metadata,
                headers=headers,
            )
        if response.status_code != 200 or "location" not in response.headers:
            raise self._refused(api_error(response))
        session_uri = response.headers["location"]
        # The session address authorises the upload by itself: keep it out of logs, and
        # send the file (and our token) only to the API's own host.
        self.protect(session_uri)
        if urlsplit(session_uri)[:2] != urlsplit(base)[:2]:
            raise DeliveryError("Drive returned an upload address on another host")
        return session_uri

    def _upload(
        self, api: GoogleSession, session_uri: str, source: BinaryIO, size: int
    ) -> dict[str, Any]:
        """Send the file in chunks; after an interruption ask Drive how much it holds and
        go on from there. Interruptions are bounded by the retry policy."""
        chunk_size = self.settings["chunk_size_kib"] * 1024
        offset = 0
        interruptions = 0
        while True:
            source.seek(offset)
            chunk = source.read(chunk_size)
            if size == 0:
                content_range = "bytes */0"
            else:
                content_range = f"bytes {offset}-{offset + len(chunk) - 1}/{size}"
            try:
                response = api.request(
                    "PUT",
                    session_uri,
                    content=chunk,
                    headers={"Content-Range": content_range},
                )
            except httpx.TransportError:
                response = None
            if response is not None and response.status_code in (200, 201):
                return response.json()
            if response is not None and response.status_code == 308:
                received = _received(response)
                if received > offset or not chunk:
                    offset = received
                    continue
                # No progress: count it as an interruption, so a server that keeps
                # refusing a chunk ends the upload rather than looping.
                response = None
            if response is not None and response.status_code in (404, 410):
                raise DeliveryError("the upload session expired", transient=True)
            if response is not None and not api_error(response).transient:
                raise self._refused(api_error(response))
            interruptions += 1
            if interruptions >= self.retry.attempts:
                raise DeliveryError("the upload was interrupted too often", transient=True)
            time.sleep(min(self.retry.max_wait, self.retry.initial_wait * 2 ** (interruptions - 1)))
            status = self._status(api, session_uri, size)
            if isinstance(status, dict):
                return status
            offset = status

    def _status(self, api: GoogleSession, session_uri: str, size: int) -> int | dict[str, Any]:
        """How many bytes Drive holds for this session (or the file, if it completed)."""
        try:
            response = api.request(
                "PUT", session_uri, content=b"", headers={"Content-Range": f"bytes */{size}"}
            )
        except httpx.TransportError:
            raise DeliveryError("lost the connection to Drive", transient=True) from None
        if response.status_code in (200, 201):
            return response.json()
        if response.status_code == 308:
            return _received(response)
        if response.status_code in (404, 410):
            raise DeliveryError("the upload session expired", transient=True)
        raise self._refused(api_error(response))


def _received(response: httpx.Response) -> int:
    """The next byte Drive expects, from a 308's `Range: bytes=0-N` (none yet: 0)."""
    match = re.match(r"bytes=0-(\d+)$", response.headers.get("range", ""))
    return int(match.group(1)) + 1 if match else 0
