"""Engine, sessions and migrations of the registry."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.exc import ArgumentError, OperationalError
from sqlalchemy.orm import Session, sessionmaker

from quarry.errors import ConfigurationError
from quarry.settings import Settings

MIGRATIONS_DIR = Path(__file__).parent / "migrations"


def make_engine(url: str) -> Engine:
    """An engine for `url`; SQLite gets WAL, foreign keys and a busy timeout so API workers
    and runs can share one file."""
    try:
        if url.startswith("sqlite"):
            engine = create_engine(url, connect_args={"timeout": 30, "check_same_thread": False})
            event.listen(engine, "connect", _sqlite_pragmas)
        else:
            engine = create_engine(url, pool_pre_ping=True)
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
    """Bring the registry to the newest revision, or fail with one clear line."""
    try:
        with engine.begin() as connection:
            config = alembic_config(engine)
            config.attributes["connection"] = connection
            command.upgrade(config, "head")
    except OperationalError as exc:
        raise ConfigurationError(
            f"cannot reach the registry database {engine.url.render_as_string()}: "
            f"{str(exc.orig).strip().splitlines()[0]}"
        ) from exc


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
