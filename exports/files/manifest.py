"""The manifest of a job's file: what was exported and how to check it got all of it.

JSON, beside the file in the export file store (`<job id>/manifest.json`, served by
GET /v1/export-jobs/{id}/manifest and kept on the job row), delivered after the file as
`<file name>.manifest.json` to destinations that are folders, and, for a zip, as its last
member `manifest.json` (without the archive's own checksum, which cannot be inside it):

- the job, configuration, format, file name and when it was written;
- `rows`: `all` or `changed`; per store, the snapshot read (`snapshot`) and, for changed
  rows, the start of the range (`since`, null when the store started over, with `reason`);
- per part: its dataset, columns (name, title, field), row count when known, and for
  changed rows the count of each kind of change;
- the total row count, and the file's size and SHA-256.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

MANIFEST_VERSION = 1
MEMBER_NAME = "manifest.json"
# In the export file store, beside the job's file; delivered beside the file as
# `<file name>.manifest.json` to destinations that are folders (destinations.kinds).
MANIFEST_FILE = "manifest.json"
MANIFEST_SUFFIX = ".manifest.json"
MANIFEST_CONTENT_TYPE = "application/json"
_CHUNK = 1 << 20


@dataclass(frozen=True)
class PartSummary:
    name: str
    dataset: str
    columns: list[dict[str, str | None]]
    rows: int | None = None
    changes: dict[str, int] | None = None


@dataclass(frozen=True)
class StoreRead:
    store_id: str
    snapshot: int | None
    since: int | None = None
    reason: str | None = None
    # The store's start was lost (past its retention, or gone from the lake): the run
    # delivers every row although nobody asked for it, which operators are told.
    start_lost: bool = False


@dataclass(frozen=True)
class FileSummary:
    """What produce() knows of a file's contents, for its manifest."""

    rows_mode: str
    stores: list[StoreRead] = field(default_factory=list)
    parts: list[PartSummary] = field(default_factory=list)
    rows: int = 0


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while chunk := stream.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def manifest_body(
    summary: FileSummary,
    *,
    job_id: str,
    export_id: str,
    name: str,
    file_format: str,
    file_name: str,
    written_at: datetime,
    path: Path | None,
    members: Sequence[str] = (),
) -> dict[str, Any]:
    """The manifest as JSON-ready data; `path` None leaves the file's own checksum out
    (the copy inside a zip)."""
    file: dict[str, Any] = {"name": file_name, "format": file_format}
    if path is not None:
        file |= {"bytes": path.stat().st_size, "sha256": sha256_of(path)}
    if members:
        file["members"] = list(members)
    return {
        "manifest_version": MANIFEST_VERSION,
        "job_id": job_id,
        "export_id": export_id,
        "name": name,
        "written_at": written_at.isoformat(),
        "rows": summary.rows_mode,
        "stores": [
            {"store_id": s.store_id, "snapshot": s.snapshot}
            | ({"since": s.since, "reason": s.reason} if summary.rows_mode == "changed" else {})
            for s in summary.stores
        ],
        "parts": [
            {"name": p.name, "dataset": p.dataset, "columns": p.columns, "rows": p.rows}
            | ({"changes": p.changes} if p.changes is not None else {})
            for p in summary.parts
        ],
        "row_count": summary.rows,
        "file": file,
    }


def manifest_text(body: Mapping[str, Any]) -> str:
    return json.dumps(body, indent=2, ensure_ascii=False) + "\n"


def add_to_zip(path: Path, body: Mapping[str, Any]) -> None:
    """Append the manifest to the archive at `path` as its last member, naming the
    members before it."""
    with zipfile.ZipFile(path, "a", compression=zipfile.ZIP_DEFLATED) as archive:
        inside = dict(body)
        inside["file"] = dict(body.get("file", {})) | {"members": archive.namelist()}
        archive.writestr(MEMBER_NAME, manifest_text(inside))
