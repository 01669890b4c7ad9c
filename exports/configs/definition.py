"""A validated configuration, and its shape in the registry row (ExportConfig).

The row's columns hold what is queried (name, entity_type, format, runnable_via_api,
destination kind, schedule); `definition` holds the rest as JSON; credentials are sealed
in `credentials_secret` and never leave it except to deliver.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from exports.configs.options import FormatOptions
from exports.files.formats import FORMATS as FILE_FORMATS
from registry.models import ExportConfig

RECORD_TYPES = ("orders", "customers", "products", "draft_orders")
ENTITY_TYPES = (*RECORD_TYPES, "query", "bundle")
# Every format of exports.files.formats; a bundle must be one holding several tables.
FORMATS = tuple(FILE_FORMATS)
# The one kind of export that cannot be triggered through the API: a live sheet sync
# replaces a spreadsheet's tab on a schedule; on demand it would race its own schedule.
SCHEDULE_ONLY_KINDS = {"google_sheets": "live sheet sync (google_sheets destination)"}
DEFINITION_VERSION = 1
# `rows: all` (every row, each run) or `rows: changed` (the rows changed since the last
# completed job, exports.files.changes).
ROWS = ("all", "changed")


@dataclass(frozen=True)
class ColumnSpec:
    field: str
    title: str


@dataclass(frozen=True)
class PartSpec:
    """One table of the file: a record dataset with columns and filters, or a query."""

    name: str
    entity_type: str
    columns: tuple[ColumnSpec, ...] = ()
    filters: dict[str, list[str]] = field(default_factory=dict)
    query: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "entity_type": self.entity_type,
            "columns": [{"field": c.field, "title": c.title} for c in self.columns],
            "filters": self.filters,
            "query": self.query,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PartSpec:
        return cls(
            name=data["name"],
            entity_type=data["entity_type"],
            columns=tuple(ColumnSpec(c["field"], c["title"]) for c in data.get("columns", [])),
            filters={k: list(v) for k, v in data.get("filters", {}).items()},
            query=data.get("query"),
        )


@dataclass(frozen=True)
class ExportDefinition:
    name: str
    entity_type: str
    format: str
    parts: tuple[PartSpec, ...]
    # None: every store of the account when the job is created.
    stores: tuple[str, ...] | None
    options: FormatOptions
    file_name: str
    destination_kind: str = "local"
    destination_settings: dict[str, Any] = field(default_factory=dict)
    credentials: dict[str, Any] = field(default_factory=dict)
    schedule_cron: str | None = None
    schedule_timezone: str | None = None
    rows: str = "all"

    @property
    def runnable_via_api(self) -> bool:
        return self.destination_kind not in SCHEDULE_ONLY_KINDS

    def body(self) -> dict[str, Any]:
        """The `definition` JSON of the row."""
        return {
            "version": DEFINITION_VERSION,
            "parts": [p.to_json() for p in self.parts],
            "stores": list(self.stores) if self.stores is not None else None,
            "options": self.options.to_json(),
            "file_name": self.file_name,
            "destination": {"settings": self.destination_settings},
            "rows": self.rows,
        }

    def fill(self, row: ExportConfig, sealed_credentials: str | None) -> None:
        """Write this definition into `row` (new or existing)."""
        row.name = self.name
        row.entity_type = self.entity_type
        row.format = self.format
        row.runnable_via_api = self.runnable_via_api
        row.definition = self.body()
        row.destination_kind = self.destination_kind
        row.credentials_secret = sealed_credentials
        row.schedule_cron = self.schedule_cron
        row.schedule_timezone = self.schedule_timezone


@dataclass(frozen=True)
class StoredConfig:
    """What a run needs of a row, detached from the session (credentials still sealed)."""

    id: str
    account_id: str
    name: str
    entity_type: str
    format: str
    parts: tuple[PartSpec, ...]
    stores: tuple[str, ...] | None
    options: FormatOptions
    file_name: str
    destination_kind: str
    destination_settings: dict[str, Any]
    credentials_secret: str | None
    rows: str = "all"

    @property
    def changed_rows(self) -> bool:
        return self.rows == "changed"

    @classmethod
    def of(cls, row: ExportConfig) -> StoredConfig:
        body = row.definition
        stores = body.get("stores")
        return cls(
            id=row.id,
            account_id=row.account_id,
            name=row.name,
            entity_type=row.entity_type,
            format=row.format,
            parts=tuple(PartSpec.from_json(p) for p in body.get("parts", [])),
            stores=tuple(stores) if stores is not None else None,
            options=FormatOptions.from_json(body.get("options")),
            file_name=body.get("file_name") or "{name}",
            destination_kind=row.destination_kind,
            destination_settings=dict(body.get("destination", {}).get("settings", {})),
            credentials_secret=row.credentials_secret,
            rows=str(body.get("rows") or "all"),
        )


def schedule_only_reason(row: ExportConfig) -> str | None:
    """Why `row` cannot run through the API (naming its type), or None when it can."""
    if row.runnable_via_api:
        return None
    kind = SCHEDULE_ONLY_KINDS.get(row.destination_kind, f"{row.destination_kind} export")
    return f"export {row.name!r} is a {kind}: it runs only on its schedule, not through the API"
