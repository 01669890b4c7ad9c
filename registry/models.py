"""Registry tables. The migrations in registry/migrations are written to match these."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship
from sqlalchemy.types import TypeDecorator


class UTCDateTime(TypeDecorator[datetime]):
    """Timestamps stored in UTC and always returned timezone-aware (SQLite drops the zone)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        return value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def utcnow() -> datetime:
    return datetime.now(UTC)


class Base(DeclarativeBase):
    type_annotation_map = {datetime: UTCDateTime, dict[str, Any]: JSON, list[Any]: JSON}


class Account(Base):
    __tablename__ = "accounts"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    subscription_id: Mapped[str] = mapped_column(String(60))
    api_enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    currency: Mapped[str] = mapped_column(String(3))
    timezone: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)

    stores: Mapped[list[Store]] = relationship(back_populates="account", order_by="Store.name")


class Store(Base):
    __tablename__ = "stores"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(255))
    domain: Mapped[str] = mapped_column(String(255))
    currency: Mapped[str] = mapped_column(String(3))
    timezone: Mapped[str] = mapped_column(String(64))
    status: Mapped[str] = mapped_column(String(16), default="active")
    last_synced_at: Mapped[datetime | None] = mapped_column(default=None)
    platform: Mapped[str] = mapped_column(String(32))
    connection_secret: Mapped[str | None] = mapped_column(Text, default=None)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)

    account: Mapped[Account] = relationship(back_populates="stores")

    __table_args__ = (Index("ix_stores_account", "account_id"),)


class ApiKey(Base):
    __tablename__ = "api_keys"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"))
    prefix: Mapped[str] = mapped_column(String(32))
    digest: Mapped[str] = mapped_column(String(64), unique=True)
    scopes: Mapped[list[Any]] = mapped_column(JSON)
    # None means every store of the account, present and future.
    store_ids: Mapped[list[Any] | None] = mapped_column(JSON, default=None)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    revoked_at: Mapped[datetime | None] = mapped_column(default=None)
    last_used_at: Mapped[datetime | None] = mapped_column(default=None)


class ExportConfig(Base):
    __tablename__ = "export_configs"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(200))
    entity_type: Mapped[str] = mapped_column(String(32))
    format: Mapped[str] = mapped_column(String(8))
    runnable_via_api: Mapped[bool] = mapped_column(Boolean, default=True)
    # columns, filters, stores, format options, file-name template, destination settings
    definition: Mapped[dict[str, Any]] = mapped_column(JSON)
    destination_kind: Mapped[str] = mapped_column(String(32), default="local")
    credentials_secret: Mapped[str | None] = mapped_column(Text, default=None)
    schedule_cron: Mapped[str | None] = mapped_column(String(120), default=None)
    schedule_timezone: Mapped[str | None] = mapped_column(String(64), default=None)
    # An operator's pause of the schedule (quarry exports pause): the scheduled_exports
    # sensor skips it; running it by hand still works. Applying a file leaves it alone.
    schedule_paused: Mapped[bool] = mapped_column(
        Boolean, default=False, server_default=text("false")
    )
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)

    __table_args__ = (UniqueConstraint("account_id", "name", name="uq_export_configs_name"),)


class ExportJob(Base):
    __tablename__ = "export_jobs"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    config_id: Mapped[str] = mapped_column(ForeignKey("export_configs.id", ondelete="CASCADE"))
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"))
    status: Mapped[str] = mapped_column(String(16), default="queued")
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(default=None)
    finished_at: Mapped[datetime | None] = mapped_column(default=None)
    dagster_run_id: Mapped[str | None] = mapped_column(String(64), default=None)
    file_path: Mapped[str | None] = mapped_column(Text, default=None)
    file_name: Mapped[str | None] = mapped_column(String(255), default=None)
    file_removed_at: Mapped[datetime | None] = mapped_column(default=None)
    # Why (exports.files.cleanup.REMOVAL_REASONS), for the download's 404; None before 0005.
    file_removed_reason: Mapped[str | None] = mapped_column(String(32), default=None)
    error: Mapped[str | None] = mapped_column(Text, default=None)
    idempotency_key: Mapped[str | None] = mapped_column(String(255), default=None)
    api_key_id: Mapped[str | None] = mapped_column(String(40), default=None)
    # Stores whose data the file holds, so a re-sync of one of them removes the file.
    store_ids: Mapped[list[Any]] = mapped_column(JSON, default=list)
    # The process running the job ("host:pid") and when it last said it was alive: the
    # reaper fails a job whose worker died (Dagster's default launcher does not notice).
    heartbeat_at: Mapped[datetime | None] = mapped_column(default=None)
    worker: Mapped[str | None] = mapped_column(String(255), default=None)
    # What the file holds (exports.files.manifest): dataset, columns, stores, snapshot
    # range, row counts per kind of change, checksum. Set with the file.
    manifest: Mapped[dict[str, Any] | None] = mapped_column(JSON, default=None)

    __table_args__ = (
        Index("ix_export_jobs_config", "config_id"),
        Index("ix_export_jobs_status", "status"),
        Index("ix_export_jobs_idempotency", "config_id", "idempotency_key"),
    )


class ExportChangeStart(Base):
    """Where the next run of a changed-rows configuration starts, per store: the store's
    published snapshot that its last completed job read. A snapshot pin (holder
    `changes:<config id>`) keeps the version from maintenance while the row lives."""

    __tablename__ = "export_change_starts"

    config_id: Mapped[str] = mapped_column(
        ForeignKey("export_configs.id", ondelete="CASCADE"), primary_key=True
    )
    store_id: Mapped[str] = mapped_column(String(40), primary_key=True)
    version: Mapped[int] = mapped_column(BigInteger)
    job_id: Mapped[str] = mapped_column(String(40))
    recorded_at: Mapped[datetime] = mapped_column(default=utcnow)


class AlertState(Base):
    """One thing that can keep failing (an export configuration, a store's sync), so that
    its repeated failures make one alert and reminders, and its recovery one more."""

    __tablename__ = "alert_states"

    subject: Mapped[str] = mapped_column(String(80), primary_key=True)
    failing_since: Mapped[datetime | None] = mapped_column(default=None)
    # Failures since failing_since, and how many of them no alert has mentioned yet.
    failures: Mapped[int] = mapped_column(Integer, default=0)
    unreported: Mapped[int] = mapped_column(Integer, default=0)
    last_sent_at: Mapped[datetime | None] = mapped_column(default=None)
    last_reason: Mapped[str | None] = mapped_column(Text, default=None)


class SyncCursor(Base):
    __tablename__ = "sync_cursors"

    store_id: Mapped[str] = mapped_column(
        ForeignKey("stores.id", ondelete="CASCADE"), primary_key=True
    )
    dataset: Mapped[str] = mapped_column(String(64), primary_key=True)
    cursor: Mapped[str | None] = mapped_column(Text, default=None)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class WarehouseSnapshot(Base):
    """A store's published view of the warehouse: the DuckLake snapshot (version) whose
    tables readers see for that store, from `created_at` until the store's next row."""

    __tablename__ = "warehouse_snapshots"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    store_id: Mapped[str] = mapped_column(ForeignKey("stores.id", ondelete="CASCADE"))
    version: Mapped[int] = mapped_column(BigInteger)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)

    __table_args__ = (Index("ix_warehouse_snapshots_store", "store_id", "id"),)


class SnapshotPin(Base):
    """A DuckLake snapshot somebody reads for a while (an export run): maintenance keeps it
    until the pin is released or expires."""

    __tablename__ = "snapshot_pins"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    version: Mapped[int] = mapped_column(BigInteger)
    holder: Mapped[str] = mapped_column(String(255))
    expires_at: Mapped[datetime] = mapped_column()

    __table_args__ = (Index("ix_snapshot_pins_holder", "holder"),)


class PendingSync(Base):
    """A sync of a store asked for outside the schedules (a Shopify webhook), to be
    submitted once `due_at` has passed. The housekeeper claims a row (`claimed_at`) before
    it submits, and records the run it got (`run_id`); a row with a run is done."""

    __tablename__ = "pending_syncs"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    store_id: Mapped[str] = mapped_column(ForeignKey("stores.id", ondelete="CASCADE"))
    reason: Mapped[str] = mapped_column(String(32))
    due_at: Mapped[datetime] = mapped_column()
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    claimed_at: Mapped[datetime | None] = mapped_column(default=None)
    run_id: Mapped[str | None] = mapped_column(String(64), default=None)

    __table_args__ = (
        # One open request (no run yet) per store: deliveries racing on several API workers
        # join it instead of each opening a window, and so does one arriving while the
        # housekeeper submits it, since the run it gets has not read anything yet.
        Index(
            "uq_pending_syncs_open",
            "store_id",
            unique=True,
            postgresql_where=text("run_id IS NULL"),
            sqlite_where=text("run_id IS NULL"),
        ),
        Index("ix_pending_syncs_due", "run_id", "due_at"),
    )


class MetricSeries(Base):
    """One counter of the work done outside the API (quarry.measures): a counter's
    `_total`, or a histogram's `_bucket`, `_sum` or `_count`, with its labels (a JSON list
    of [name, value] pairs, in the metric's label order). Processes add to `value`;
    /metrics reads them all."""

    __tablename__ = "metric_series"

    name: Mapped[str] = mapped_column(String(100), primary_key=True)
    labels: Mapped[str] = mapped_column(String(500), primary_key=True)
    value: Mapped[float] = mapped_column(Float, default=0.0)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class ConsoleSession(Base):
    """A web console sign-in (api/console): the cookie carries a random token, this row
    only its SHA-256 digest. Signing out (or the key's revocation) ends it server-side."""

    __tablename__ = "console_sessions"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    api_key_id: Mapped[str] = mapped_column(ForeignKey("api_keys.id", ondelete="CASCADE"))
    csrf_token: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    expires_at: Mapped[datetime] = mapped_column()
    revoked_at: Mapped[datetime | None] = mapped_column(default=None)

    __table_args__ = (Index("ix_console_sessions_key", "api_key_id"),)


class ConsoleFormSecret(Base):
    """Secrets typed into a console form that came back (a problem, a preview), kept for
    a short time so the page need not send them back (api/console/kept_secrets). The form
    carries a random handle; this row holds only its SHA-256 digest and the secrets sealed
    with the app's SecretBox. Bound to its session: signing out, or the session's deletion,
    ends it."""

    __tablename__ = "console_form_secrets"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    session_id: Mapped[str] = mapped_column(ForeignKey("console_sessions.id", ondelete="CASCADE"))
    sealed: Mapped[str] = mapped_column(Text)
    expires_at: Mapped[datetime] = mapped_column()

    __table_args__ = (Index("ix_console_form_secrets_session", "session_id"),)
