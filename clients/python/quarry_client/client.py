"""The client: one httpx.Client, the key as a Bearer header, answers as typed models
(quarry_client.models), problems raised as QuarryError, and retries as quarry_client._retry
says (429 after Retry-After; connection errors and 5xx of repeatable requests with backoff;
at most `max_retries` times)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import httpx

from quarry_client import _retry, _shared
from quarry_client.errors import ExportFailed, QuarryError, WaitTimedOut
from quarry_client.models import (
    Account,
    Dataset,
    ExportDetail,
    ExportJob,
    ExportSummary,
    QueryResult,
    Record,
    Store,
)

if TYPE_CHECKING:
    import pandas

T = TypeVar("T")
# Kept for code that imported them from here (quarry-client 1).
DEFAULT_POLL_SECONDS = _shared.DEFAULT_POLL_SECONDS
MAX_PAGE_SIZE = _shared.MAX_PAGE_SIZE


class Client:
    """`Client("https://quarry.example.com", "qk_...")`; use it as a context manager or
    call `close()`. `max_retries` bounds the retries of one call (429s, and connection
    errors and 5xx of repeatable requests); `retry_backoff` is the first wait of the
    latter, doubling up to 8 s."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout: float = _shared.DEFAULT_TIMEOUT,
        max_retries: int = _shared.DEFAULT_MAX_RETRIES,
        retry_backoff: float = _shared.DEFAULT_BACKOFF,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.max_retries = max_retries
        self.retry_backoff = retry_backoff
        self._http = httpx.Client(
            base_url=base_url.rstrip("/"),
            headers=_shared.headers(api_key),
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
        """One call, retried as the module says; a problem raises QuarryError."""
        return self._send(method, path, _read, **kwargs)

    def _send(
        self, method: str, path: str, consume: Callable[[httpx.Response], T], **kwargs: Any
    ) -> T:
        """Streams the answer; a 2xx or 3xx goes to `consume`, inside the retries (a
        download cut off half-way starts again)."""
        repeatable = _retry.repeatable(method, path, kwargs.get("headers"))
        for attempt in range(self.max_retries + 1):
            last = attempt == self.max_retries
            try:
                with self._http.stream(method, path, **kwargs) as response:
                    if response.status_code < 400:
                        return consume(response)
                    response.read()
                    error = QuarryError.from_response(response)
            except httpx.TransportError as failed:
                delay = _retry.delay_after_transport_error(
                    failed, attempt, self.retry_backoff, repeatable
                )
                if last or delay is None:
                    raise
                time.sleep(delay)
                continue
            delay = _retry.delay_after_error(error, attempt, self.retry_backoff, repeatable)
            if last or delay is None:
                raise error
            time.sleep(delay)
        raise AssertionError("unreachable: the loop returns or raises")

    def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        return self._send(method, path, _read_json, **kwargs)

    # --- account, stores, datasets ---------------------------------------------------

    def account(self) -> Account:
        return Account.from_json(self._json("GET", "/v1/account"))

    def stores(self) -> list[Store]:
        return [Store.from_json(s) for s in self._json("GET", "/v1/stores")]

    def datasets(self) -> list[Dataset]:
        return [Dataset.from_json(d) for d in self._json("GET", "/v1/datasets")]

    # --- queries ---------------------------------------------------------------------

    def query(
        self,
        query: str,
        *,
        store_ids: Sequence[str] | None = None,
        time_zone: str | None = None,
    ) -> QueryResult:
        """Run a ShopifyQL query over the key's stores (or `store_ids`)."""
        body = _shared.query_body(query, store_ids, time_zone)
        return QueryResult.from_json(self._json("POST", "/v1/query", json=body))

    def query_pandas(self, query: str, **options: Any) -> pandas.DataFrame:
        return self.query(query, **options).to_pandas()

    # --- records ---------------------------------------------------------------------

    def records(
        self,
        dataset: str,
        *,
        page_size: int = MAX_PAGE_SIZE,
        **filters: str | int | Sequence[str],
    ) -> Iterator[Record]:
        """Every record of `dataset` matching `filters` (any record field, `store_ids`,
        `fields`, `created_at_min`, `created_at_max`), page after page."""
        page = 1
        while True:
            params = _shared.record_params(filters, page, page_size)
            answer = self._json("GET", f"/v1/{dataset}", params=params)
            yield from (Record(item) for item in answer["data"])
            if not answer["has_more"]:
                return
            page += 1

    def record(self, dataset: str, record_id: str) -> Record:
        return Record(self._json("GET", f"/v1/{dataset}/{record_id}"))

    # --- exports ---------------------------------------------------------------------

    def exports(self) -> list[ExportSummary]:
        return [ExportSummary.from_json(e) for e in self._json("GET", "/v1/exports")["data"]]

    def export(self, export_id: str) -> Export:
        return Export(self, export_id)

    def job(self, job_id: str) -> Job:
        return Job(self, job_id)

    def jobs(
        self, *, export_id: str | None = None, status: str | None = None
    ) -> Iterator[ExportJob]:
        """The account's run history, newest first, page after page."""
        page = 1
        while True:
            params = _shared.job_params(export_id, status, page)
            answer = self._json("GET", "/v1/export-jobs", params=params)
            yield from (ExportJob.from_json(job) for job in answer["data"])
            if not answer["has_more"]:
                return
            page += 1


def _read(response: httpx.Response) -> httpx.Response:
    response.read()
    return response


def _read_json(response: httpx.Response) -> Any:
    return _read(response).json()


class Export:
    """An export configuration: `get()` it, `run()` it."""

    def __init__(self, client: Client, export_id: str) -> None:
        self.client = client
        self.id = export_id

    def __repr__(self) -> str:
        return f"Export({self.id!r})"

    def get(self) -> ExportDetail:
        return ExportDetail.from_json(self.client._json("GET", f"/v1/exports/{self.id}"))

    def run(self, *, idempotency_key: str | None = None) -> Job:
        """Start a job (202); its `status` is the 202's (`queued`). The same idempotency
        key within 24 hours gives the same job; without one the client makes one, so that
        retrying a run whose answer was lost never starts a second job."""
        key = idempotency_key or _retry.new_idempotency_key()
        answer = self.client._json(
            "POST", f"/v1/exports/{self.id}/run", headers={_retry.IDEMPOTENCY_HEADER: key}
        )
        return Job(self.client, answer["job_id"], ExportJob.from_json(answer))


class Job:
    """An export job: `refresh()`, `wait()` until it ends, `download(path)` its file.
    `last` is the job as last seen (the 202 of its run, or the latest GET)."""

    def __init__(self, client: Client, job_id: str, last: ExportJob | None = None) -> None:
        self.client = client
        self.id = job_id
        self.last = last
        self.last_request_id: str | None = None

    def __repr__(self) -> str:
        return f"Job({self.id!r}, status={self.status!r})"

    def refresh(self) -> ExportJob:
        response = self.client.request("GET", f"/v1/export-jobs/{self.id}")
        self.last = ExportJob.from_json(response.json())
        self.last_request_id = response.headers.get("X-Request-Id")
        return self.last

    @property
    def status(self) -> str | None:
        return None if self.last is None else self.last.status

    def wait(
        self,
        *,
        poll_seconds: float = DEFAULT_POLL_SECONDS,
        timeout: float | None = None,
        raise_on_failure: bool = True,
    ) -> ExportJob:
        """Poll until the job is completed or failed (every `poll_seconds`; each poll
        retried as any request is). A failed job raises ExportFailed unless
        `raise_on_failure` is False; WaitTimedOut after `timeout` seconds."""
        started = time.monotonic()
        while True:
            job = self.refresh()
            if job.finished:
                break
            if timeout is not None and time.monotonic() - started + poll_seconds > timeout:
                raise WaitTimedOut(f"job {self.id} still {job.status} after {timeout:g} s")
            time.sleep(poll_seconds)
        if job.status == "failed" and raise_on_failure:
            raise ExportFailed(job, self.last_request_id)
        return job

    def download(self, path: str | Path) -> Path:
        """Stream the job's file to `path` (a folder: the file's own name in it), through
        the same retries as any request (a 429 waits Retry-After)."""
        if Path(path).is_dir() and (self.last is None or not self.last.file_name):
            self.refresh()
        file_name = self.last.file_name if self.last else None
        target = _shared.download_target(path, self.id, file_name)

        def save(answer: httpx.Response) -> Path:
            partial = _shared.partial_of(target)
            with partial.open("wb") as out:
                for chunk in answer.iter_bytes():
                    out.write(chunk)
            partial.replace(target)
            return target

        return self.client._send("GET", f"/v1/export-jobs/{self.id}/download", save)
