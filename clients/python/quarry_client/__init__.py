"""quarry-client: a typed client for Quarry's /v1 API (docs/client.md), sync (`Client`)
and async (`AsyncClient`)."""

from quarry_client._version import __version__
from quarry_client.async_client import AsyncClient, AsyncExport, AsyncJob
from quarry_client.client import Client, Export, Job
from quarry_client.errors import (
    ExportFailed,
    QuarryError,
    QuarryException,
    RateLimited,
    WaitTimedOut,
)
from quarry_client.models import (
    Account,
    Dataset,
    DatasetField,
    ExportDestination,
    ExportDetail,
    ExportJob,
    ExportPart,
    ExportSchedule,
    ExportSummary,
    QueryResult,
    Record,
    Store,
)

__all__ = [
    "Account",
    "AsyncClient",
    "AsyncExport",
    "AsyncJob",
    "Client",
    "Dataset",
    "DatasetField",
    "Export",
    "ExportDestination",
    "ExportDetail",
    "ExportFailed",
    "ExportJob",
    "ExportPart",
    "ExportSchedule",
    "ExportSummary",
    "Job",
    "QuarryError",
    "QuarryException",
    "QueryResult",
    "RateLimited",
    "Record",
    "Store",
    "WaitTimedOut",
    "__version__",
]
