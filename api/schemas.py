"""Response models, for /openapi.json only: responses are rendered by api/json.py (DuckDB's
JSON for records), so these describe the bodies without building them per request. The one
request body, POST /v1/query's, is also validated with its model here."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model, field_validator
from pydantic_core import PydanticCustomError

from exports.files.formats import FORMATS
from quarry.zones import time_zones
from warehouse.catalog import Aggregation, Dataset, FieldType
from warehouse.query import MAX_QUERY_LENGTH


class ProblemItem(BaseModel):
    """One problem of a 400: `field` and `message` for a request, `line`, `column`,
    `message` and `severity` for a query."""

    model_config = ConfigDict(extra="allow")

    field: str | None = None
    message: str
    line: int | None = None
    column: int | None = None
    severity: str | None = None


class Problem(BaseModel):
    """An RFC 7807 problem; every non-2xx response is one (application/problem+json)."""

    model_config = ConfigDict(extra="allow")

    type: str
    title: str
    status: int
    detail: str
    instance: str | None = None
    errors: list[ProblemItem] | None = None


class Account(BaseModel):
    account_id: str
    account_name: str
    subscription_id: str
    api_enabled: bool
    store_count: int = Field(description="Number of stores the key can access.")
    scopes: list[str] = Field(description="Scopes granted to the key.")
    currency: str = Field(description="ISO 4217 code of the account's currency.")
    timezone: str = Field(description="IANA time zone of the account.")


class Store(BaseModel):
    id: str
    name: str
    myplatform_domain: str
    currency: str
    timezone: str
    status: Literal["active", "syncing"]
    last_synced_at: datetime | None = Field(
        description="When the store's last sync finished (UTC), or null before the first."
    )


class DatasetField(BaseModel):
    name: str
    title: str
    description: str
    type: Literal["string", "number", "money", "date", "boolean", "percent"]
    role: Literal["dimension", "metric"]
    default_aggregation: Aggregation | None
    aggregate_only: bool = Field(description="Only for COUNT in queries; never in a record.")


class DatasetEntry(BaseModel):
    name: str
    title: str
    description: str
    kind: Literal["query", "records"] = Field(
        description="`records`: served by GET /v1/{dataset}; `query`: by POST /v1/query only."
    )
    fields: list[DatasetField]


class Health(BaseModel):
    status: Literal["ok"]


class Readiness(BaseModel):
    status: Literal["ready"]
    checks: dict[str, str] = Field(description="Each required dependency: `ok`.")
    exports: dict[str, Any] = Field(
        description="Whether export runs can be launched now; informational, never failing "
        "readiness: `dagster_webserver` is `reachable` or `unreachable`."
    )


# Money is a JSON number with its exact decimal digits; float is only how JSON Schema
# spells "number" here, values are never converted to float.
_PYTHON_TYPES: dict[FieldType, Any] = {
    "string": str,
    "number": int,
    "money": float,
    "percent": float,
    "date": datetime,
    "boolean": bool,
}


def record_model(ds: Dataset) -> type[BaseModel]:
    """The record of `ds`: every record field, each optional (`fields` may leave it out)
    and nullable."""
    definitions: dict[str, Any] = {
        f.name: (_PYTHON_TYPES[f.type] | None, Field(default=None, description=f.description))
        for f in ds.record_fields
    }
    model = create_model(_class_name(ds, "Record"), **definitions)
    model.__doc__ = f"One record of {ds.name}. Clients ignore fields they do not know."
    return model


def page_model(ds: Dataset, record: type[BaseModel]) -> type[BaseModel]:
    """A page of `ds` records."""
    model = create_model(
        _class_name(ds, "Page"),
        data=(list[record], ...),  # type: ignore[valid-type]
        page=(int, ...),
        page_size=(int, ...),
        has_more=(bool, Field(description="Whether another page exists.")),
    )
    model.__doc__ = f"A page of {ds.name}, ordered by created_at then id."
    return model


def _class_name(ds: Dataset, suffix: str) -> str:
    return "".join(part.title() for part in ds.name.split("_")) + suffix


# ---- POST /v1/query ----


class QueryRequest(BaseModel):
    """The body of POST /v1/query. Unknown fields are refused, not ignored."""

    model_config = ConfigDict(extra="forbid", strict=True)

    # minLength in the schema only: the empty query and an empty store id or zone are
    # refused by the checks that name them (a positioned "The query is empty.", a store
    # the key cannot read, an unknown zone), after the key's checks.
    query: str = Field(
        max_length=MAX_QUERY_LENGTH,
        json_schema_extra={"minLength": 1},
        description="A query in the service's query language (docs/query-language.md).",
    )
    store_ids: list[Annotated[str, Field(json_schema_extra={"minLength": 1})]] | None = Field(
        default=None,
        min_length=1,
        description="Narrows the stores read to these ids, within the key's stores (never "
        "wider). Omitted: every store the key can read.",
    )
    time_zone: str | None = Field(
        default=None,
        # Every zone the server reads, so the schema allows no zone it refuses.
        json_schema_extra={"enum": [*sorted(time_zones()), None]},
        description="IANA zone the window, buckets and date filters use (a query's "
        "WITH TIMEZONE wins). Omitted: the account's zone. `localtime` is refused: the "
        "server's own zone is no client's business.",
    )

    @field_validator("time_zone")
    @classmethod
    def _known_zone(cls, value: str | None) -> str | None:
        # The same list the query language's WITH TIMEZONE accepts.
        if value is not None and value not in time_zones():
            raise PydanticCustomError(
                "time_zone", "'{zone}' is not an IANA time zone", {"zone": value}
            )
        return value


class QueryColumn(BaseModel):
    name: str = Field(description="The key of this column in each row and in `totals`.")
    title: str
    type: FieldType
    role: Literal["dimension", "metric"]


class QueryWindow(BaseModel):
    gte: datetime = Field(description="Start of the window, inclusive (UTC).")
    lt: datetime = Field(description="End of the window, exclusive (UTC).")


class QueryResult(BaseModel):
    """One flat table. Money is a JSON number with the exact digits of the amount, in
    `currency`."""

    columns: list[QueryColumn]
    rows: list[dict[str, Any]] = Field(description="One object per row, keyed by column name.")
    totals: dict[str, Any] | None = Field(
        default=None,
        description="One value per metric column; present only when the query says WITH TOTALS.",
    )
    currency: str = Field(description="ISO 4217 code the money columns are in.")
    time_zone: str = Field(description="IANA zone the window was resolved in.")
    window: QueryWindow
    truncated: bool = Field(
        default=False,
        description="Present (true) only when the default row limit cut the result.",
    )


JobStatus = Literal["queued", "running", "completed", "failed"]


class ExportSummary(BaseModel):
    """An export configuration as GET /v1/exports lists it."""

    id: str
    name: str
    entity_type: str
    # Every format of exports/files/formats.py: Parquet and JSON Lines are Quarry's
    # additions to the contract's examples (docs/api.md).
    format: str = Field(json_schema_extra={"enum": list(FORMATS)})
    runnable_via_api: bool = Field(description="False for schedule-only destinations (422).")
    last_run_at: datetime | None
    last_run_status: JobStatus | None
    total_runs: int


class ExportList(BaseModel):
    data: list[ExportSummary]


class ExportPart(BaseModel):
    name: str | None
    entity_type: str
    columns: list[dict[str, Any]] = Field(description="`{field, title}` per column.")
    filters: dict[str, Any]
    query: str | None


class ExportDestination(BaseModel):
    kind: str
    settings: dict[str, Any] = Field(description="As validated; never credentials.")
    has_credentials: bool


class ExportSchedule(BaseModel):
    cron: str
    timezone: str | None
    paused: bool = Field(
        description="Quarry's own: paused by POST /v1/exports/{id}/pause (or `quarry exports "
        "pause`); the schedule does not run it, a run by hand still does."
    )


class ExportDetail(ExportSummary):
    """One configuration: what it reads and where it goes (docs/exports.md)."""

    stores: list[str] | None = Field(description="Its own store list; null: every store.")
    store_ids: list[str] = Field(description="The stores it reads now.")
    parts: list[ExportPart]
    format_options: dict[str, Any]
    file_name: str | None = Field(description="The file-name template.")
    destination: ExportDestination
    schedule: ExportSchedule | None
    rows: Literal["all", "changed"] = Field(
        description="Quarry's own: `changed` delivers the rows changed since the last "
        "completed job (with `_change` and `_snapshot`), `all` every row."
    )
    created_at: datetime
    updated_at: datetime


class RunAccepted(BaseModel):
    """202 of POST /v1/exports/{id}/run; `Location` names the job to poll."""

    job_id: str
    status: Literal["queued"]


class ExportJobView(BaseModel):
    """The Export job object of the contract, with the additive fields of docs/exports.md."""

    job_id: str
    export_id: str
    status: JobStatus
    name: str
    entity_type: str
    created_at: datetime
    file_name: str | None
    error: str | None
    started_at: datetime | None
    finished_at: datetime | None
    file_removed_at: datetime | None


class ExportJobPage(BaseModel):
    data: list[ExportJobView]
    page: int
    page_size: int
    has_more: bool


class WebhookReceived(BaseModel):
    """What POST /webhooks/shopify did with a verified delivery."""

    status: Literal["duplicate", "scheduled", "joined"] = Field(
        description="`duplicate`: a delivery id seen in the last 24 hours, nothing done; "
        "`scheduled`: an incremental sync of the store is due; `joined`: one already was."
    )


# A file body in the schema: what the download endpoints stream.
FILE_SCHEMA = {"type": "string", "format": "binary"}
