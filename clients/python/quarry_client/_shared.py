"""What Client and AsyncClient build the same way: headers, request bodies and parameters,
the file a download lands in."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from quarry_client._version import __version__

# The contract asks clients to poll a job every 15 to 30 seconds.
DEFAULT_POLL_SECONDS = 15.0
MAX_PAGE_SIZE = 250
DEFAULT_TIMEOUT = 60.0
DEFAULT_MAX_RETRIES = 3
DEFAULT_BACKOFF = 0.5


def headers(api_key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_key}", "User-Agent": f"quarry-client/{__version__}"}


def query_body(
    query: str, store_ids: Sequence[str] | None, time_zone: str | None
) -> dict[str, Any]:
    body: dict[str, Any] = {"query": query}
    if store_ids is not None:
        body["store_ids"] = list(store_ids)
    if time_zone is not None:
        body["time_zone"] = time_zone
    return body


def record_params(
    filters: dict[str, str | int | Sequence[str]], page: int, page_size: int
) -> list[tuple[str, str]]:
    """A record list's parameters: a list value is the parameter once per item."""
    params: list[tuple[str, str]] = []
    for name, value in filters.items():
        values = [value] if isinstance(value, str | int) else list(value)
        params += [(name, str(item)) for item in values]
    return [*params, ("page", str(page)), ("page_size", str(page_size))]


def job_params(export_id: str | None, status: str | None, page: int) -> dict[str, str]:
    params = {"page_size": str(MAX_PAGE_SIZE), "page": str(page)}
    if export_id is not None:
        params["export_id"] = export_id
    if status is not None:
        params["status"] = status
    return params


def download_target(path: str | Path, job_id: str, file_name: str | None) -> Path:
    """`path` itself, or in a folder the job's own file name."""
    target = Path(path)
    return target / (file_name or f"{job_id}.export") if target.is_dir() else target


def partial_of(target: Path) -> Path:
    """Where a download is written until it is whole (then renamed to `target`)."""
    return target.with_name(target.name + ".part")
