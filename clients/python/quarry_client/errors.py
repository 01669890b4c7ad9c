"""What the client raises. `QuarryException` is the base of all of it; `QuarryError` is a
problem the API answered (RFC 7807 problem+json); `ExportFailed` and `WaitTimedOut` are what
waiting for a job found, not HTTP answers."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import httpx

if TYPE_CHECKING:
    from quarry_client.models import ExportJob


class QuarryException(Exception):
    """Anything quarry-client raises on purpose (httpx's own errors aside: a connection that
    still fails after the retries raises httpx.TransportError)."""


class QuarryError(QuarryException):
    """A problem+json answer: `status`, `title`, `detail` and, on a 400, `errors` (each
    `{field, message}`, or `{line, column, message, severity}` for a query); `request_id`
    is the answer's X-Request-Id, the id the server's log lines carry."""

    def __init__(
        self,
        status: int,
        title: str,
        detail: str,
        errors: list[dict[str, Any]] | None = None,
        *,
        type: str | None = None,
        instance: str | None = None,
        headers: httpx.Headers | None = None,
    ) -> None:
        self.headers = headers or httpx.Headers()
        self.request_id: str | None = self.headers.get("X-Request-Id")
        suffix = f" (request {self.request_id})" if self.request_id else ""
        super().__init__(f"{status} {title}: {detail}{suffix}")
        self.status = status
        self.title = title
        self.detail = detail
        self.errors = errors or []
        self.type = type
        self.instance = instance

    @classmethod
    def from_response(cls, response: httpx.Response) -> QuarryError:
        try:
            body = response.json()
        except ValueError:
            body = None
        if not isinstance(body, dict):
            # Not a problem (a proxy's page, say): the status and the text say what we know.
            body = {"title": response.reason_phrase, "detail": response.text[:500]}
        kind = RateLimited if response.status_code == 429 else cls
        return kind(
            response.status_code,
            str(body.get("title", response.reason_phrase)),
            str(body.get("detail", "")),
            body.get("errors"),
            type=body.get("type"),
            instance=body.get("instance"),
            headers=response.headers,
        )

    @property
    def retry_after(self) -> float | None:
        """Retry-After in seconds (429 and 503 send it), at least 1; None without one."""
        value = self.headers.get("Retry-After")
        if value is None:
            return None
        try:
            return max(1.0, float(value))
        except ValueError:
            return 1.0


class RateLimited(QuarryError):
    """429: `retry_after` seconds until a request will pass."""

    @property
    def retry_after(self) -> float:
        return super().retry_after or 1.0


class ExportFailed(QuarryException):
    """`Job.wait()` saw the job end `failed`. Not an HTTP error (the job's GET answered
    200): `job` is that answer, `error` (also `detail`) the job's reason, `request_id` the
    id of the request that saw it."""

    def __init__(self, job: ExportJob, request_id: str | None = None) -> None:
        self.job = job
        self.job_id = job.job_id
        self.error = job.error or "no reason given"
        self.request_id = request_id
        super().__init__(f"export job {job.job_id} failed: {self.error}")

    @property
    def detail(self) -> str:
        return self.error


class WaitTimedOut(QuarryException):
    """`Job.wait()` gave up before the job ended."""
