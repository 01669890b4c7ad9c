"""Typed answers: each object of the API as a frozen dataclass with its fields as attributes
(datetimes parsed), so an IDE completes them and a type checker checks them.

Every model also answers `model["field"]` and `model.get("field")` with the JSON value as
sent, and keeps the whole object in `raw`: fields a newer server adds are not lost, and code
written against the dicts of quarry-client 1 keeps working. Records, whose fields vary with
the dataset and the `fields` parameter, are `Record`s: dicts that also answer attributes.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeVar, Union

if TYPE_CHECKING:
    import pandas

JobStatus = Literal["queued", "running", "completed", "failed"]
ModelT = TypeVar("ModelT", bound="Model")


@dataclasses.dataclass(frozen=True)
class Model:
    """Base of the answers: `from_json`, dict-style access to the JSON as sent."""

    raw: dict[str, Any] = dataclasses.field(
        default_factory=dict, repr=False, compare=False, kw_only=True
    )
    _hints: ClassVar[dict[type, dict[str, Any]]] = {}

    @classmethod
    def from_json(cls: type[ModelT], data: Mapping[str, Any]) -> ModelT:
        """The model of a JSON object; unknown keys stay in `raw`, a missing one is None."""
        hints = Model._hints.get(cls)
        if hints is None:
            hints = Model._hints[cls] = typing.get_type_hints(cls)
        values = {
            field.name: _convert(hints[field.name], data.get(field.name))
            for field in dataclasses.fields(cls)
            if field.name != "raw" and (field.name in data or field.default is dataclasses.MISSING)
        }
        return cls(**values, raw=dict(data))

    def __getitem__(self, key: str) -> Any:
        return self.raw[key]

    def __contains__(self, key: object) -> bool:
        return key in self.raw

    def get(self, key: str, default: Any = None) -> Any:
        return self.raw.get(key, default)


def _convert(hint: Any, value: Any) -> Any:
    if value is None:
        return None
    origin = typing.get_origin(hint)
    if origin in (Union, types.UnionType):
        options = [a for a in typing.get_args(hint) if a is not type(None)]
        return _convert(options[0], value) if len(options) == 1 else value
    if hint is datetime and isinstance(value, str):
        return datetime.fromisoformat(value)
    if origin is list and isinstance(value, list):
        (item,) = typing.get_args(hint) or (Any,)
        return [_convert(item, v) for v in value]
    if isinstance(hint, type) and issubclass(hint, Model) and isinstance(value, Mapping):
        return hint.from_json(value)
    return value


@dataclasses.dataclass(frozen=True)
class Account(Model):
    """GET /v1/account: the key's account and what the key may do."""

    account_id: str
    account_name: str
    subscription_id: str
    api_enabled: bool
    store_count: int
    scopes: list[str]
    currency: str
    timezone: str


@dataclasses.dataclass(frozen=True)
class Store(Model):
    """One of GET /v1/stores."""

    id: str
    name: str
    myplatform_domain: str
    currency: str
    timezone: str
    status: str
    last_synced_at: datetime | None


@dataclasses.dataclass(frozen=True)
class DatasetField(Model):
    name: str
    title: str
    description: str
    type: str
    role: str
    default_aggregation: str | None
    aggregate_only: bool


@dataclasses.dataclass(frozen=True)
class Dataset(Model):
    """One of GET /v1/datasets: `kind` is `records` (GET /v1/{name}) or `query`."""

    name: str
    title: str
    description: str
    kind: str
    fields: list[DatasetField]


class Record(dict[str, Any]):
    """One record: a dict (its fields vary with the dataset and `fields=`) that also answers
    `record.total_price`; a field the answer lacks raises AttributeError. `id`, `store_id`,
    `created_at` and `updated_at` (every record dataset has them) are typed; the dates stay
    the ISO strings the API sends, as `record["created_at"]` does."""

    id: str
    store_id: str
    created_at: str
    updated_at: str

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


@dataclasses.dataclass(frozen=True)
class QueryResult(Model):
    """A POST /v1/query answer: `rows` keyed by column name, `columns` (each `{name, title,
    type, role}`), the `window` resolved (`{gte, lt}`, ISO strings), `totals` with WITH
    TOTALS, `truncated` when the default row limit cut the rows."""

    columns: list[dict[str, Any]]
    rows: list[dict[str, Any]]
    currency: str
    time_zone: str
    window: dict[str, str]
    totals: dict[str, Any] | None = None
    truncated: bool = False

    def to_pandas(self) -> pandas.DataFrame:
        """The rows as a DataFrame, columns in the answer's order (needs pandas)."""
        import pandas as pd

        names = [column["name"] for column in self.columns]
        return pd.DataFrame(self.rows, columns=names)


@dataclasses.dataclass(frozen=True)
class ExportSummary(Model):
    """An export configuration as GET /v1/exports lists it, with its last run."""

    id: str
    name: str
    entity_type: str
    format: str
    runnable_via_api: bool
    last_run_at: datetime | None
    last_run_status: JobStatus | None
    total_runs: int


@dataclasses.dataclass(frozen=True)
class ExportPart(Model):
    name: str | None
    entity_type: str
    columns: list[dict[str, Any]]
    filters: dict[str, Any]
    query: str | None


@dataclasses.dataclass(frozen=True)
class ExportDestination(Model):
    kind: str
    settings: dict[str, Any]
    has_credentials: bool


@dataclasses.dataclass(frozen=True)
class ExportSchedule(Model):
    cron: str
    timezone: str | None


@dataclasses.dataclass(frozen=True)
class ExportDetail(ExportSummary):
    """GET /v1/exports/{id}: what a configuration reads and where it goes (no secrets)."""

    stores: list[str] | None
    store_ids: list[str]
    parts: list[ExportPart]
    format_options: dict[str, Any]
    file_name: str | None
    destination: ExportDestination
    schedule: ExportSchedule | None
    created_at: datetime
    updated_at: datetime


@dataclasses.dataclass(frozen=True)
class ExportJob(Model):
    """An export job as GET /v1/export-jobs/{id} shows it. The 202 of a run knows only
    `job_id` and `status`; the other fields are None until the job is fetched."""

    job_id: str
    status: JobStatus
    export_id: str | None = None
    name: str | None = None
    entity_type: str | None = None
    created_at: datetime | None = None
    file_name: str | None = None
    error: str | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    file_removed_at: datetime | None = None

    @property
    def finished(self) -> bool:
        return self.status in ("completed", "failed")
