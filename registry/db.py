"""Engine, sessions and migrations of the registry."""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine, create_engine, event, inspect, text
from sqlalchemy.exc import ArgumentError, OperationalError
from sqlalchemy.orm import Session, sessionmaker

from quarry.errors import ConfigurationError
from quarry.settings import Settings

MIGRATIONS_DIR = Path(__file__).parent / "migrations"
# Any fixed number: the PostgreSQL advisory lock that serialises concurrent migrators.
_MIGRATION_LOCK_KEY = 0x5155_4152  # "QUAR"
# Seconds to wait for a PostgreSQL connection: an unreachable host fails in this time
# instead of hanging a command or a worker start.
_CONNECT_TIMEOUT = 10


def make_engine(url: str) -> Engine:
    """An engine for `url`; SQLite gets WAL, foreign keys and a busy timeout so API workers
    and runs can share one file."""
    try:
        if url.startswith("sqlite"):
            engine = create_engine(url, connect_args={"timeout": 30, "check_same_thread": False})
            event.listen(engine, "connect", _sqlite_pragmas)
        else:
            connect_args: dict[str, Any] = {}
            if url.startswith("postgresql") and "connect_timeout" not in url:
                connect_args["connect_timeout"] = _CONNECT_TIMEOUT
            engine = create_engine(url, pool_pre_ping=True, connect_args=connect_args)
    except (ArgumentError, ImportError, ValueError) as exc:
        raise ConfigurationError(f"QUARRY_DATABASE_URL is not a usable URL: {exc}") from exc
    return engine


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def alembic_config(engine: Engine) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["engine"] = engine
    return config


def migrate(engine: Engine) -> None:
    """Bring the registry to the newest revision, or fail with one clear line.

    Safe to call from several processes at once (API workers, the Dagster daemon and a
    command starting together on a fresh database): they take turns, and all but the first
    find the registry up to date. A registry already at the newest revision is left alone
    without asking alembic, which logs a few INFO lines each time it looks (every API
    worker, command and export run opens the registry)."""
    try:
        if _at_head(engine):
            return
        with _sqlite_file_lock(engine), engine.begin() as connection:
            _lock_postgresql(connection)
            config = alembic_config(engine)
            config.attributes["connection"] = connection
            command.upgrade(config, "head")
    except OperationalError as exc:
        raise ConfigurationError(
            f"cannot reach the registry database {engine.url.render_as_string()}: "
            f"{str(exc.orig).strip().splitlines()[0]}"
        ) from exc


def _at_head(engine: Engine) -> bool:
    """Whether the registry's alembic_version is the newest revision (no table: not)."""
    heads = set(ScriptDirectory.from_config(alembic_config(engine)).get_heads())
    with engine.connect() as connection:
        if not inspect(connection).has_table("alembic_version"):
            return False
        current = set(connection.scalars(text("SELECT version_num FROM alembic_version")))
    return current == heads


def _lock_postgresql(connection: Connection) -> None:
    # Held until the migration's transaction ends; PostgreSQL's DDL is transactional, so a
    # waiting migrator then sees the finished schema and the new alembic_version.
    if connection.dialect.name == "postgresql":
        connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _MIGRATION_LOCK_KEY})


@contextmanager
def _sqlite_file_lock(engine: Engine) -> Iterator[None]:
    """An exclusive lock beside a SQLite registry file for the length of a migration.

    SQLite runs DDL outside the driver's transactions, so two migrators could both see an
    empty database and both create the tables; a lock file is what they can share."""
    database = engine.url.database if engine.dialect.name == "sqlite" else None
    if not database or database == ":memory:" or database.startswith("file:"):
        yield
        return
    lock_path = Path(database).with_name(Path(database).name + ".migrate-lock")
    try:
        handle = lock_path.open("a")
    except OSError as exc:
        raise ConfigurationError(
            f"cannot write beside the registry database {database}: {exc.strerror or exc}"
        ) from exc
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


class Registry:
    """The registry of one process: an engine and a session factory, built from settings."""

    def __init__(self, settings: Settings, *, run_migrations: bool = True) -> None:
        self.settings = settings
        if settings.resolved_database_url.startswith("sqlite"):
            settings.ensure_home()
        self.engine = make_engine(settings.resolved_database_url)
        if run_migrations:
            migrate(self.engine)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)

    @contextmanager
    def session(self) -> Iterator[Session]:
        """A session committed on success and rolled back on error."""
        session = self._sessions()
        try:
            yield session
            session.commit()
        except BaseException:
            session.rollback()
            raise
        finally:
            session.close()

    def dispose(self) -> None:
        self.engine.dispose()
