"""The one settings object. Read from the environment when an app, command or resource is
built, never at import time."""

from __future__ import annotations

import os
import secrets
import socket
import tempfile
import warnings
from functools import cached_property
from pathlib import Path
from typing import Any, Literal, TypeVar
from urllib.parse import urlsplit

from pydantic import AliasChoices, Field, ValidationInfo, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from quarry.errors import ConfigurationError

# The longest any duration setting may be: a century. Beyond it the datetime arithmetic of
# a retention or a timeout overflows (a crash on every housekeeping tick), and no such
# setting means more than "keep for ever".
_CENTURY_DAYS = 36_500
_CENTURY_HOURS = _CENTURY_DAYS * 24
_CENTURY_MINUTES = _CENTURY_HOURS * 60
_CENTURY_SECONDS = _CENTURY_MINUTES * 60

SettingsT = TypeVar("SettingsT", bound=BaseSettings)


class Settings(BaseSettings):
    """Every knob Quarry reads from the environment (see docs/configuration.md)."""

    model_config = SettingsConfigDict(env_prefix="QUARRY_", extra="ignore")

    home: Path = Field(default=Path(".quarry"))
    database_url: str | None = None
    dagster_home: Path | None = Field(
        default=None, validation_alias=AliasChoices("DAGSTER_HOME", "QUARRY_DAGSTER_HOME")
    )
    secret_key: str | None = None
    rate_limit: str = "120/60"
    redis_url: str | None = None
    dagster_url: str = "http://127.0.0.1:3000"
    # Dagster's run and event storage on PostgreSQL (a postgresql:// URL); SQLite under
    # DAGSTER_HOME when unset.
    dagster_postgres_url: str | None = None
    public_url: str = "http://127.0.0.1:8000"
    # How long a web console sign-in lasts (api/console), in hours; signing out ends it
    # sooner.
    console_session_hours: float = Field(default=12.0, gt=0, le=24 * 30)
    # Who this process is among Quarry's roles (docs/deployment.md): export jobs record the
    # identity of the worker that runs them. Not the host name: several roles may share a
    # host, and one role's processes must never be taken for another's.
    role_id: str = Field(default_factory=socket.gethostname, min_length=1)
    # A running export job whose worker sent no heartbeat for this long is failed by the
    # housekeeper (the worker beats every 5 s).
    heartbeat_timeout_seconds: float = Field(default=60.0, ge=10, le=_CENTURY_SECONDS)
    # The Dagster code server that executes runs, as the orchestrator reaches it
    # (host:port); unset, the orchestrator runs its own (one machine).
    worker_address: str | None = None
    # Where a fleet run's batch steps execute: in the run's own process, or on the Celery
    # workers of every worker host (`quarry fleet-worker`), over QUARRY_REDIS_URL.
    fleet_executor: Literal["in_process", "celery"] = "in_process"
    # Seconds a Celery task may stay unacknowledged before Redis gives it to another
    # worker: a worker host that died gets its steps redelivered after this long.
    fleet_visibility_timeout: int = Field(default=600, ge=10)
    # Which table checks a fleet run logs for each store it synced: `failures` (a store's
    # `synced` check carries every table check's figures; a table's own check is logged
    # when it fails or warns) or `all` (every table check, as a run per store does: about
    # 17 more events per store, each a write to Dagster's storage).
    fleet_table_checks: Literal["failures", "all"] = "failures"
    allow_private_hosts: bool = False
    duckdb_memory_limit: str = "2GB"
    # An export run's own DuckDB limit: its process reads nothing but the export, and an
    # export's sort spills past it instead of holding the whole table (10M orders took
    # 2.6 GB of RSS under the 2GB limit, about 0.7 GB under 400MB, 17% slower).
    export_duckdb_memory_limit: str = "400MB"
    duckdb_threads: int = Field(default_factory=lambda: max(1, os.cpu_count() or 1))
    # DuckDB's signature check of the extension files that Quarry's packages ship: off by
    # default (warehouse.extensions says why); true puts it back, at about 0.25 s per
    # process that opens the lake.
    duckdb_verify_extensions: bool = False
    # The warehouse (DuckLake): its catalog (a SQLite file in QUARRY_HOME by default, or a
    # postgresql:// URL) and its data files (a folder in QUARRY_HOME, or s3://bucket/prefix).
    catalog_url: str | None = None
    data_url: str | None = None
    # An S3-compatible store other than AWS (MinIO, moto, ...): its endpoint URL, and the
    # region to sign for. Credentials come from the standard AWS variables.
    s3_endpoint_url: str | None = None
    s3_region: str | None = None
    # Warehouse snapshots nobody reads are expired (and their files deleted) once they are
    # this old, or this long after a newer snapshot of their store replaced them: longer
    # than the longest API request. Exports pin the snapshot they read until they end.
    snapshot_retention_hours: float = Field(default=24.0, ge=0, le=_CENTURY_HOURS)
    # Export files older than this many days are removed (their jobs stay, marked removed);
    # unset keeps files until a store re-syncs or is removed.
    export_retention_days: int | None = Field(default=None, ge=0, le=_CENTURY_DAYS)
    # Finished Dagster runs older than this many days are deleted with their events, except
    # those holding a partition's latest materialization or check result.
    run_retention_days: int = Field(default=30, ge=1, le=_CENTURY_DAYS)
    # POST /v1/query: interrupt a query after this many seconds (504), and refuse one whose
    # estimated result has more rows than this before TIMESERIES fills gaps.
    query_timeout_seconds: float = Field(default=30.0, gt=0, le=_CENTURY_SECONDS)
    query_max_groups: int = Field(default=100_000, ge=1)
    # POST /v1/query: answer from the sales rollups where one gives the facts' answer
    # exactly (warehouse.rollups); off (QUARRY_ROLLUPS=off) reads the facts always. The
    # sync writes the rollups either way.
    rollups: bool = True
    # The API keeps up to this many rollup rows in its own memory (about 430 bytes each),
    # copied from the lake once per published version of a store, so that a query a rollup
    # answers reads no lake file (warehouse.resident); 0 reads them from the lake always.
    resident_rollup_rows: int = Field(default=1_000_000, ge=0)
    # GET /metrics (Prometheus) on the API: off unless asked for; with a token, only a
    # request sending it as `Authorization: Bearer <token>` is answered (it names stores).
    metrics: bool = False
    metrics_token: str | None = None
    # Figures of syncs and stores carry a store's id up to this many stores in the
    # registry, and only its account's id past it: a fleet's thousands of stores would
    # make as many series per figure (quarry.measures).
    metrics_max_stores: int = Field(default=200, ge=0)
    # How long the API keeps a query's result for the same request on the same snapshot;
    # 0 turns the cache off (the benchmark measures the engine that way).
    query_cache_seconds: float = Field(default=300.0, ge=0, le=_CENTURY_SECONDS)
    # Every request body, on every path: larger is a 413 before it is read (1 MiB).
    max_body_bytes: int = Field(default=1_048_576, ge=1)
    # `quarry serve` closes a connection whose request headers are not complete this long
    # after it opened (or after the previous response), or whose body stalls this long.
    header_timeout_seconds: float = Field(default=10.0, gt=0, le=_CENTURY_SECONDS)
    body_timeout_seconds: float = Field(default=30.0, gt=0, le=_CENTURY_SECONDS)
    # Logs (quarry.logs): text or JSON lines, and the level; unset, the services log INFO
    # (Dagster's daemon WARNING: its INFO is a line per sensor tick) and the CLI WARNING.
    log_format: Literal["text", "json"] = "text"
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] | None = None
    # Alerts to whoever runs Quarry (destinations/alerts.py, docs/operations.md): a failed
    # sync or export job is mailed to QUARRY_ALERT_EMAIL (comma-separated) through the SMTP
    # server of alert_smtp_url, and/or posted to the webhook. Unset, nothing is sent.
    # alert_smtp_url comes before alert_email: alert_email's check reads it.
    alert_smtp_url: str | None = None
    alert_email: str | None = None
    alert_email_from: str | None = None
    alert_webhook_url: str | None = None
    # Repeated failures of one export configuration or one store's sync make one alert,
    # then a reminder with the count at most this often, then one "recovered" alert
    # (destinations/alert_groups.py); 0 sends every failure.
    alert_repeat_minutes: float = Field(default=60.0, ge=0, le=_CENTURY_MINUTES)
    # A changed-rows export's start snapshot older than this is let go (maintenance may
    # expire it) and the next run delivers every row again (docs/exports.md).
    changed_rows_retention_days: float = Field(default=30.0, gt=0, le=_CENTURY_DAYS)

    @field_validator(
        "alert_smtp_url", "alert_email", "alert_email_from", "alert_webhook_url", "metrics_token"
    )
    @classmethod
    def _blank_is_unset(cls, value: str | None) -> str | None:
        # `QUARRY_ALERT_EMAIL=` in an env file means "no alerts", not an address "" (and
        # `QUARRY_METRICS_TOKEN=` no token, not an empty one).
        if value is None or not value.strip():
            return None
        return value.strip()

    @field_validator("alert_smtp_url", mode="after")
    @classmethod
    def _smtp_url(cls, value: str | None) -> str | None:
        # The message names the expected shape, never the value: it may hold a password.
        if value is not None and not _url_with_host(value, ("smtp", "smtps")):
            raise ValueError("must be smtp://[USER:PASSWORD@]HOST[:PORT] or smtps://...")
        return value

    @field_validator("alert_email", mode="after")
    @classmethod
    def _email_needs_smtp(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is not None and not info.data.get("alert_smtp_url"):
            raise ValueError("needs QUARRY_ALERT_SMTP_URL, the server alerts are sent through")
        return value

    @field_validator("alert_webhook_url", mode="after")
    @classmethod
    def _webhook_url(cls, value: str | None) -> str | None:
        if value is not None and not _url_with_host(value, ("http", "https")):
            raise ValueError("must be an http:// or https:// URL")
        return value

    @field_validator("home", mode="after")
    @classmethod
    def _absolute_home(cls, value: Path) -> Path:
        return value.expanduser().resolve()

    @field_validator("log_format", mode="before")
    @classmethod
    def _format_any_case(cls, value: Any) -> Any:
        # json and JSON mean the same; an empty variable means the default.
        return (value.strip().lower() or "text") if isinstance(value, str) else value

    @field_validator("log_level", mode="before")
    @classmethod
    def _level_any_case(cls, value: Any) -> Any:
        return (value.strip().upper() or None) if isinstance(value, str) else value

    @property
    def resolved_database_url(self) -> str:
        """The registry URL: QUARRY_DATABASE_URL, else SQLite in QUARRY_HOME."""
        return self.database_url or f"sqlite:///{self.home / 'registry.db'}"

    @property
    def resolved_dagster_home(self) -> Path:
        return (self.dagster_home or self.home / "dagster").expanduser().resolve()

    @property
    def warehouse_dir(self) -> Path:
        """The embedded warehouse's folder: its catalog and data when neither is set."""
        return self.home / "warehouse"

    @property
    def resolved_catalog_url(self) -> str:
        """The DuckLake catalog: QUARRY_CATALOG_URL, else a SQLite file in QUARRY_HOME."""
        return self.catalog_url or f"sqlite:///{self.warehouse_dir / 'catalog.sqlite'}"

    @property
    def resolved_data_url(self) -> str:
        """Where the lake's Parquet files go: <QUARRY_DATA_URL>/lake/, else a folder in
        QUARRY_HOME. Always ends with a slash, as DuckLake's DATA_PATH wants. The lake has
        a folder of its own under QUARRY_DATA_URL because DuckLake's cleanup removes every
        file under DATA_PATH that it does not track: export and demo files sit beside it
        (quarry.files)."""
        if self.data_url is None:
            return str(self.warehouse_dir / "data") + "/"
        return self.data_url.rstrip("/") + "/lake/"

    def require_redis_url(self) -> str:
        """QUARRY_REDIS_URL, which Celery needs; ConfigurationError when unset."""
        if not self.redis_url:
            raise ConfigurationError("QUARRY_FLEET_EXECUTOR=celery needs QUARRY_REDIS_URL")
        return self.redis_url

    @property
    def alert_recipients(self) -> list[str]:
        """The addresses of QUARRY_ALERT_EMAIL, in order; empty when unset."""
        return [a.strip() for a in (self.alert_email or "").split(",") if a.strip()]

    @property
    def alerts_enabled(self) -> bool:
        """Whether a failure is sent anywhere (by email, webhook or both)."""
        return bool(self.alert_recipients or self.alert_webhook_url)

    @property
    def demo_dir(self) -> Path:
        return self.home / "demo"

    @property
    def exports_dir(self) -> Path:
        return self.home / "exports"

    @cached_property
    def fernet_keys(self) -> list[str]:
        """Fernet keys, newest first. QUARRY_SECRET_KEY may hold several, comma-separated,
        for rotation; when unset a development key is generated into QUARRY_HOME."""
        if self.secret_key:
            return [k.strip() for k in self.secret_key.split(",") if k.strip()]
        return [_development_key(self.home)]

    def ensure_home(self) -> None:
        """Create QUARRY_HOME and DAGSTER_HOME, or fail with one clear line."""
        for path in (self.home, self.resolved_dagster_home):
            try:
                path.mkdir(parents=True, exist_ok=True)
                # A file of this process's own: processes starting together (a server's
                # workers) must not delete each other's probe.
                with tempfile.TemporaryFile(dir=path, prefix=".write-probe-"):
                    pass
            except OSError as exc:
                raise ConfigurationError(
                    f"cannot write to {path}: {exc.strerror or exc}. "
                    "Set QUARRY_HOME (or DAGSTER_HOME) to a writable directory."
                ) from exc


def _url_with_host(value: str, schemes: tuple[str, ...]) -> bool:
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 (raises ValueError on a port that is not a number)
    except ValueError:
        return False
    return parts.scheme in schemes and bool(parts.hostname)


def _development_key(home: Path) -> str:
    """The key in QUARRY_HOME/secret.key, generated (0600, with a warning) when absent.

    Several processes may start at once on a fresh home (API workers, the Dagster daemon):
    the key is written to a private temporary file and hard-linked into place, which
    fails for every process but the first, and those read the winner's complete key."""
    from cryptography.fernet import Fernet

    key_file = home / "secret.key"
    try:
        if key_file.exists():
            return _read_key(key_file)
        home.mkdir(parents=True, exist_ok=True)
        key = Fernet.generate_key().decode()
        temporary = home / f".secret.key.{os.getpid()}.{secrets.token_hex(4)}"
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "w") as handle:
                handle.write(key)
            try:
                os.link(temporary, key_file)
            except FileExistsError:
                return _read_key(key_file)
        finally:
            temporary.unlink(missing_ok=True)
    except OSError as exc:
        raise ConfigurationError(
            f"cannot keep a development key in {key_file}: {exc.strerror or exc}. "
            "Set QUARRY_SECRET_KEY, or QUARRY_HOME to a writable directory."
        ) from exc
    warnings.warn(
        f"QUARRY_SECRET_KEY is not set: generated a development key in {key_file}. "
        "Set QUARRY_SECRET_KEY in production.",
        stacklevel=3,
    )
    return key


def _read_key(key_file: Path) -> str:
    key = key_file.read_text().strip()
    if not key:
        raise ConfigurationError(f"{key_file} is empty: delete it or set QUARRY_SECRET_KEY")
    return key


def read_environment(cls: type[SettingsT], **overrides: object) -> SettingsT:
    """Build the settings class `cls` from the environment now. A value that does not parse
    is one ConfigurationError naming the variable (the class's env_prefix + field)."""
    from pydantic import ValidationError

    try:
        return cls(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        first = exc.errors()[0]
        prefix = str(cls.model_config.get("env_prefix", ""))
        name = prefix + "_".join(str(p) for p in first["loc"]).upper()
        raise ConfigurationError(f"{name}: {first['msg']}") from exc


def load_settings(**overrides: object) -> Settings:
    """Read the environment now. Raises ConfigurationError on a value that does not parse."""
    return read_environment(Settings, **overrides)
