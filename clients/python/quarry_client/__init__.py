"""quarry-client: a typed client for Quarry's /v1 API (docs/client.md)."""

from quarry_client.client import Client, Export, Job, QueryResult
from quarry_client.errors import ExportFailed, QuarryError, RateLimited, WaitTimedOut

__all__ = [
    "Client",
    "Export",
    "ExportFailed",
    "Job",
    "QuarryError",
    "QueryResult",
    "RateLimited",
    "WaitTimedOut",
]
