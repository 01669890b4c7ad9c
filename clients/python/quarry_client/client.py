"""The client: one httpx.Client, the key as a Bearer header, problems raised as
QuarryError, and 429s waited out as Retry-After says (up to `max_retries` times)."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from quarry_client.errors import ExportFailed, QuarryError, RateLimited, WaitTimedOut

if TYPE_CHECKING:
    import pandas

# The contract asks clients to poll a job every 15 to 30 seconds.
DEFAULT_POLL_SECONDS = 15.0
MAX_PAGE_SIZE = 250
FINISHED = ("completed", "failed")


@dataclass(frozen=True)
class QueryResult:
    """A /v1/query answer: `rows` keyed by column name, `columns` with their types."""

    columns: list[dict[str, Any]]
    rows: list[dict[str, Any]]
    currency: str
    time_zone: str
    window: dict[str, str]
    totals: dict[str, Any] | None = None
    truncated: bool = False
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    def to_pandas(self) -> pandas.DataFrame:
        """The rows as a DataFrame, columns in the answer's order (needs pandas)."""
        import pandas as pd

        names = [column["name"] for column in self.columns]
        return pd.DataFrame(self.rows, columns=names)


class Client:
    """`Client("https://quarry.example.com", "qk_...")`; use it as a context manager or
    call `close()`."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout: float = 60.0,
        max_retries: int = 3,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.max_retries = max_retries
        self._http = httpx.Client(
            base_url=base_url.rstrip("/"),
            headers={"Authorization": f"Bearer {api_key}", "User-Agent": "quarry-client/1"},
            timeout=timeout,
            transport=transport,
        )

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    # --- plumbing --------------------------------------------------------------------

    def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """One call; a problem raises QuarryError, a 429 is retried after Retry-After."""
        for attempt in range(self.max_retries + 1):
            response = self._http.request(method, path, **kwargs)
            if response.status_code < 400:
                return response
            error = QuarryError.from_response(response)
            if isinstance(error, RateLimited) and attempt < self.max_retries:
                time.sleep(error.retry_after)
                continue
            raise error
        raise AssertionError("unreachable: the loop returns or raises")

    def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        return self.request(method, path, **kwargs).json()

    # --- account, stores, datasets ---------------------------------------------------

    def account(self) -> dict[str, Any]:
        return self._json("GET", "/v1/account")

    def stores(self) -> list[dict[str, Any]]:
        return self._json("GET", "/v1/stores")

    def datasets(self) -> list[dict[str, Any]]:
        return self._json("GET", "/v1/datasets")

    # --- queries ---------------------------------------------------------------------

    def query(
        self,
        query: str,
        *,
        store_ids: Sequence[str] | None = None,
        time_zone: str | None = None,
    ) -> QueryResult:
        """Run a ShopifyQL query over the key's stores (or `store_ids`)."""
        body: dict[str, Any] = {"query": query}
        if store_ids is not None:
            body["store_ids"] = list(store_ids)
        if time_zone is not None:
            body["time_zone"] = time_zone
        answer = self._json("POST", "/v1/query", json=body)
        return QueryResult(
            columns=answer["columns"],
            rows=answer["rows"],
            currency=answer["currency"],
            time_zone=answer["time_zone"],
            window=answer["window"],
            totals=answer.get("totals"),
            truncated=bool(answer.get("truncated", False)),
            raw=answer,
        )

    def query_pandas(self, query: str, **options: Any) -> pandas.DataFrame:
        return self.query(query, **options).to_pandas()

    # --- records ---------------------------------------------------------------------

    def records(
        self,
        dataset: str,
        *,
        page_size: int = MAX_PAGE_SIZE,
        **filters: str | int | Sequence[str],
    ) -> Iterator[dict[str, Any]]:
        """Every record of `dataset` matching `filters` (any record field, `store_ids`,
        `fields`, `created_at_min`, `created_at_max`), page after page."""
        params: list[tuple[str, str]] = []
        for name, value in filters.items():
            values = [value] if isinstance(value, str | int) else list(value)
            params += [(name, str(item)) for item in values]
        page = 1
        while True:
            answer = self._json(
                "GET",
                f"/v1/{dataset}",
                params=[*params, ("page", str(page)), ("page_size", str(page_size))],
            )
            yield from answer["data"]
            if not answer["has_more"]:
                return
            page += 1

    def record(self, dataset: str, record_id: str) -> dict[str, Any]:
        return self._json("GET", f"/v1/{dataset}/{record_id}")

    # --- exports ---------------------------------------------------------------------

    def exports(self) -> list[dict[str, Any]]:
        return self._json("GET", "/v1/exports")["data"]

    def export(self, export_id: str) -> Export:
        return Export(self, export_id)

    def job(self, job_id: str) -> Job:
        return Job(self, job_id)

    def jobs(
        self, *, export_id: str | None = None, status: str | None = None
    ) -> Iterator[dict[str, Any]]:
        """The account's run history, newest first, page after page."""
        params: dict[str, str] = {"page_size": str(MAX_PAGE_SIZE)}
        if export_id is not None:
            params["export_id"] = export_id
        if status is not None:
            params["status"] = status
        page = 1
        while True:
            answer = self._json("GET", "/v1/export-jobs", params={**params, "page": str(page)})
            yield from answer["data"]
            if not answer["has_more"]:
                return
            page += 1


@dataclass(frozen=True)
class Export:
    """An export configuration: `get()` it, `run()` it."""

    client: Client
    id: str

    def get(self) -> dict[str, Any]:
        return self.client._json("GET", f"/v1/exports/{self.id}")

    def run(self, *, idempotency_key: str | None = None) -> Job:
        """Start a job (202); the same idempotency key within 24 hours gives the same job."""
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else {}
        answer = self.client._json("POST", f"/v1/exports/{self.id}/run", headers=headers)
        return Job(self.client, answer["job_id"])


@dataclass
class Job:
    """An export job: `refresh()`, `wait()` until it ends, `download(path)` its file."""

    client: Client
    id: str
    last: Mapping[str, Any] = field(default_factory=dict)

    def refresh(self) -> Mapping[str, Any]:
        self.last = self.client._json("GET", f"/v1/export-jobs/{self.id}")
        return self.last

    @property
    def status(self) -> str | None:
        value = self.last.get("status")
        return None if value is None else str(value)

    def wait(
        self,
        *,
        poll_seconds: float = DEFAULT_POLL_SECONDS,
        timeout: float | None = None,
        raise_on_failure: bool = True,
    ) -> Mapping[str, Any]:
        """Poll until the job is completed or failed (every `poll_seconds`; 429s wait as
        Retry-After says). A failed job raises ExportFailed unless `raise_on_failure` is
        False; WaitTimedOut after `timeout` seconds."""
        started = time.monotonic()
        while True:
            job = self.refresh()
            if job["status"] in FINISHED:
                break
            if timeout is not None and time.monotonic() - started + poll_seconds > timeout:
                raise WaitTimedOut(f"job {self.id} still {job['status']} after {timeout:g} s")
            time.sleep(poll_seconds)
        if job["status"] == "failed" and raise_on_failure:
            raise ExportFailed(409, "Export failed", str(job.get("error") or "no reason given"))
        return job

    def download(self, path: str | Path) -> Path:
        """Stream the job's file to `path` (a folder: the file's own name in it)."""
        target = Path(path)
        if target.is_dir() and not self.last.get("file_name"):
            self.refresh()
        with self.client._http.stream("GET", f"/v1/export-jobs/{self.id}/download") as answer:
            if answer.status_code >= 400:
                answer.read()
                raise QuarryError.from_response(answer)
            if target.is_dir():
                target = target / (self.last.get("file_name") or f"{self.id}.export")
            partial = target.with_name(target.name + ".part")
            with partial.open("wb") as out:
                for chunk in answer.iter_bytes():
                    out.write(chunk)
            partial.replace(target)
        return target
