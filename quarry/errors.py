"""One error hierarchy. Services raise these; the API's single handler renders them as
problem+json and the CLI prints them as one line."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar


@dataclass
class QuarryError(Exception):
    """Base of every error a user can act on."""

    detail: str
    errors: list[dict[str, Any]] = field(default_factory=list)
    status: int = 500
    title: str = "Internal error"
    # A server error's detail reaches the client only when the error's own text is safe to
    # show (it is written by Quarry and names no path, host or secret).
    public_detail: ClassVar[bool] = False

    def __str__(self) -> str:
        return self.detail


@dataclass
class ConfigurationError(QuarryError):
    """A setting or the environment is wrong (unwritable home, bad database URL)."""

    status: int = 500
    title: str = "Configuration error"


@dataclass
class InvalidRequest(QuarryError):
    """The request (body, parameter, argument) does not fit; `errors` has {field, message}."""

    status: int = 400
    title: str = "Invalid request"


@dataclass
class InvalidQuery(QuarryError):
    """The query string has errors; `errors` has {line, column, message, severity}."""

    status: int = 400
    title: str = "Invalid query"


@dataclass
class Unauthorized(QuarryError):
    status: int = 401
    title: str = "Unauthorized"


@dataclass
class Forbidden(QuarryError):
    status: int = 403
    title: str = "Insufficient scope"


@dataclass
class NotFound(QuarryError):
    status: int = 404
    title: str = "Not found"


@dataclass
class NotAcceptable(QuarryError):
    """The Accept header allows none of the media types an endpoint answers with."""

    status: int = 406
    title: str = "Not acceptable"


@dataclass
class Conflict(QuarryError):
    status: int = 409
    title: str = "Conflict"


@dataclass
class Gone(QuarryError):
    """What the request names existed and no longer does (an expired download link)."""

    status: int = 410
    title: str = "Gone"


@dataclass
class RangeNotSatisfiable(QuarryError):
    """A Range header that asks for bytes past the end of a file of `size` bytes."""

    size: int = 0
    status: int = 416
    title: str = "Range not satisfiable"


@dataclass
class UnprocessableExport(QuarryError):
    status: int = 422
    title: str = "Unprocessable export"


@dataclass
class RateLimited(QuarryError):
    retry_after: int = 1
    limit: int = 0
    status: int = 429
    title: str = "Too many requests"


@dataclass
class PlanUpgradeRequired(Forbidden):
    """The account's plan does not include the API (GET /v1/account still answers)."""

    title: str = "Plan upgrade required"


@dataclass
class MissingExchangeRate(QuarryError):
    """Money must be converted but the warehouse has no rate on or before a needed day."""

    status: int = 500
    title: str = "Missing exchange rate"
    public_detail: ClassVar[bool] = True  # it names the currency asked for


@dataclass
class ServiceUnavailable(QuarryError):
    """A dependency the service needs (registry, warehouse) cannot be reached."""

    status: int = 503
    title: str = "Service unavailable"


@dataclass
class QueryTimedOut(QuarryError):
    """A query ran past its time limit and was interrupted."""

    status: int = 504
    title: str = "Query timed out"
