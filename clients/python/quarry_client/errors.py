"""Problems the API answers (RFC 7807 problem+json), raised as exceptions."""

from __future__ import annotations

from typing import Any

import httpx


class QuarryError(Exception):
    """A problem+json answer: `status`, `title`, `detail` and, on a 400, `errors` (each
    `{field, message}`, or `{line, column, message, severity}` for a query)."""

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
        super().__init__(f"{status} {title}: {detail}")
        self.status = status
        self.title = title
        self.detail = detail
        self.errors = errors or []
        self.type = type
        self.instance = instance
        self.headers = headers or httpx.Headers()

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


class RateLimited(QuarryError):
    """429: `retry_after` seconds until a request will pass."""

    @property
    def retry_after(self) -> float:
        try:
            return max(1.0, float(self.headers.get("Retry-After", "1")))
        except ValueError:
            return 1.0


class ExportFailed(QuarryError):
    """`Job.wait()` saw the job end `failed`; `detail` is the job's error."""


class WaitTimedOut(Exception):
    """`Job.wait()` gave up before the job ended."""
