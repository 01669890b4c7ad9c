"""AsyncClient: Client's surface on httpx.AsyncClient, each call awaited (`records()` and
`jobs()` are async iterators). Answers, errors and retries are the same (quarry_client._retry);
waits use anyio, so it runs under asyncio or trio."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
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


class AsyncClient:
    """`async with AsyncClient("https://quarry.example.com", "qk_...") as quarry:`; or
    call `await aclose()`. The options are Client's."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout: float = _shared.DEFAULT_TIMEOUT,
        max_retries: int = _shared.DEFAULT_MAX_RETRIES,
        retry_backoff: float = _shared.DEFAULT_BACKOFF,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.max_retries = max_retries
        self.retry_backoff = retry_backoff
        self._http = httpx.AsyncClient(
            base_url=base_url.rstrip("/"),
            headers=_shared.headers(api_key),
            timeout=timeout,
            transport=transport,
        )

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    # --- plumbing --------------------------------------------------------------------

    async def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """One call, retried as Client.request is; a problem raises QuarryError."""
        return await self._send(method, path, _read, **kwargs)

    async def _send(
        self,
        method: str,
        path: str,
        consume: Callable[[httpx.Response], Awaitable[T]],
        **kwargs: Any,
    ) -> T:
        repeatable = _retry.repeatable(method, path, kwargs.get("headers"))
        for attempt in range(self.max_retries + 1):
            last = attempt == self.max_retries
            try:
                async with self._http.stream(method, path, **kwargs) as response:
                    if response.status_code < 400:
                        return await consume(response)
                    await response.aread()
                    error = QuarryError.from_response(response)
            except httpx.TransportError as failed:
                delay = _retry.delay_after_transport_error(
                    failed, attempt, self.retry_backoff, repeatable
                )
                if last or delay is None:
                    raise
                await anyio.sleep(delay)
                continue
            delay = _retry.delay_after_error(error, attempt, self.retry_backoff, repeatable)
            if last or delay is None:
                raise error
            await anyio.sleep(delay)
        raise AssertionError("unreachable: the loop returns or raises")

    async def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        return await self._send(method, path, _read_json, **kwargs)

    # --- account, stores, datasets ---------------------------------------------------

    async def account(self) -> Account:
        return Account.from_json(await self._json("GET", "/v1/account"))

    async def stores(self) -> list[Store]:
        return [Store.from_json(s) for s in await self._json("GET", "/v1/stores")]

    async def datasets(self) -> list[Dataset]:
        return [Dataset.from_json(d) for d in await self._json("GET", "/v1/datasets")]

    # --- queries ---------------------------------------------------------------------

    async def query(
        self,
        query: str,
        *,
        store_ids: Sequence[str] | None = None,
        time_zone: str | None = None,
    ) -> QueryResult:
        body = _shared.query_body(query, store_ids, time_zone)
        return QueryResult.from_json(await self._json("POST", "/v1/query", json=body))

    async def query_pandas(self, query: str, **options: Any) -> pandas.DataFrame:
        return (await self.query(query, **options)).to_pandas()

    # --- records ---------------------------------------------------------------------

    async def records(
        self,
        dataset: str,
        *,
        page_size: int = _shared.MAX_PAGE_SIZE,
        **filters: str | int | Sequence[str],
    ) -> AsyncIterator[Record]:
        """`async for record in quarry.records("orders", ...)`: every page."""
        page = 1
        while True:
            params = _shared.record_params(filters, page, page_size)
            answer = await self._json("GET", f"/v1/{dataset}", params=params)
            for item in answer["data"]:
                yield Record(item)
            if not answer["has_more"]:
                return
            page += 1

    async def record(self, dataset: str, record_id: str) -> Record:
        return Record(await self._json("GET", f"/v1/{dataset}/{record_id}"))

    # --- exports ---------------------------------------------------------------------

    async def exports(self) -> list[ExportSummary]:
        answer = await self._json("GET", "/v1/exports")
        return [ExportSummary.from_json(e) for e in answer["data"]]

    def export(self, export_id: str) -> AsyncExport:
        return AsyncExport(self, export_id)

    def job(self, job_id: str) -> AsyncJob:
        return AsyncJob(self, job_id)

    async def jobs(
        self, *, export_id: str | None = None, status: str | None = None
    ) -> AsyncIterator[ExportJob]:
        page = 1
        while True:
            params = _shared.job_params(export_id, status, page)
            answer = await self._json("GET", "/v1/export-jobs", params=params)
            for job in answer["data"]:
                yield ExportJob.from_json(job)
            if not answer["has_more"]:
                return
            page += 1


async def _read(response: httpx.Response) -> httpx.Response:
    await response.aread()
    return response


async def _read_json(response: httpx.Response) -> Any:
    return (await _read(response)).json()


class AsyncExport:
    """Export's surface, awaited."""

    def __init__(self, client: AsyncClient, export_id: str) -> None:
        self.client = client
        self.id = export_id

    def __repr__(self) -> str:
        return f"AsyncExport({self.id!r})"

    async def get(self) -> ExportDetail:
        return ExportDetail.from_json(await self.client._json("GET", f"/v1/exports/{self.id}"))

    async def run(self, *, idempotency_key: str | None = None) -> AsyncJob:
        key = idempotency_key or _retry.new_idempotency_key()
        answer = await self.client._json(
            "POST", f"/v1/exports/{self.id}/run", headers={_retry.IDEMPOTENCY_HEADER: key}
        )
        return AsyncJob(self.client, answer["job_id"], ExportJob.from_json(answer))


class AsyncJob:
    """Job's surface, awaited."""

    def __init__(self, client: AsyncClient, job_id: str, last: ExportJob | None = None) -> None:
        self.client = client
        self.id = job_id
        self.last = last
        self.last_request_id: str | None = None

    def __repr__(self) -> str:
        return f"AsyncJob({self.id!r}, status={self.status!r})"

    async def refresh(self) -> ExportJob:
        response = await self.client.request("GET", f"/v1/export-jobs/{self.id}")
        self.last = ExportJob.from_json(response.json())
        self.last_request_id = response.headers.get("X-Request-Id")
        return self.last

    @property
    def status(self) -> str | None:
        return None if self.last is None else self.last.status

    async def wait(
        self,
        *,
        poll_seconds: float = _shared.DEFAULT_POLL_SECONDS,
        timeout: float | None = None,
        raise_on_failure: bool = True,
    ) -> ExportJob:
        started = time.monotonic()
        while True:
            job = await self.refresh()
            if job.finished:
                break
            if timeout is not None and time.monotonic() - started + poll_seconds > timeout:
                raise WaitTimedOut(f"job {self.id} still {job.status} after {timeout:g} s")
            await anyio.sleep(poll_seconds)
        if job.status == "failed" and raise_on_failure:
            raise ExportFailed(job, self.last_request_id)
        return job

    async def download(self, path: str | Path) -> Path:
        if Path(path).is_dir() and (self.last is None or not self.last.file_name):
            await self.refresh()
        file_name = self.last.file_name if self.last else None
        target = _shared.download_target(path, self.id, file_name)

        async def save(answer: httpx.Response) -> Path:
            partial = anyio.Path(_shared.partial_of(target))
            async with await partial.open("wb") as out:
                async for chunk in answer.aiter_bytes():
                    await out.write(chunk)
            await partial.replace(target)
            return target

        return await self.client._send("GET", f"/v1/export-jobs/{self.id}/download", save)
