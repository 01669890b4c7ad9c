"""The warehouse is one DuckLake: a catalog (SQLite file or PostgreSQL database) and
Parquet data files (a folder or an S3 prefix), read and written through DuckDB.

`connect` returns an in-memory DuckDB connection with the lake attached as `lake`; every
process keeps one (an ATTACH costs tens to hundreds of milliseconds of catalog work) and
hands out cursors of it. `write_lock` serializes the lake's write transactions across
processes and hosts: DuckLake's own conflict handling does not let two writers commit
safely here (a SQLite catalog refuses a second writing process; on PostgreSQL two
transactions deleting from one table conflict and are not resolved by its retries).
"""

from __future__ import annotations

import atexit
import fcntl
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import duckdb

from quarry.errors import ConfigurationError
from quarry.locks import advisory_lock
from quarry.measures import TALLY
from quarry.settings import Settings
from warehouse import extensions
from warehouse.sql_values import bind
from warehouse.tables import ensure_tables, missing_ddl
from warehouse.transactions import transaction

LAKE = "lake"

# A writer waits this long for another's transaction before giving up; the longest write
# transaction (a full sync's batch, a maintenance step) takes seconds.
LOCK_TIMEOUT_SECONDS = 600.0
# SQLite's own wait for a lock taken by another process's catalog connection.
SQLITE_BUSY_TIMEOUT_MS = 30_000
# How long `connect` keeps retrying an ATTACH that found the catalog locked.
ATTACH_RETRY_SECONDS = 60.0


@dataclass(frozen=True)
class LakeLocation:
    """Where the catalog and the data are, as DuckLake's ATTACH wants them."""

    catalog_kind: str  # "sqlite" or "postgres"
    catalog: str  # SQLite file path, or a libpq connection string
    data_path: str  # a folder (with a trailing slash) or s3://bucket/prefix/
    # The data folder is the home's own (no QUARRY_DATA_URL): it moves with the home.
    in_home: bool = False

    @property
    def sqlite_file(self) -> Path | None:
        return Path(self.catalog) if self.catalog_kind == "sqlite" else None

    @property
    def on_s3(self) -> bool:
        return self.data_path.startswith("s3://")


def location(settings: Settings) -> LakeLocation:
    """The lake of `settings`; ConfigurationError names a catalog URL it cannot use."""
    url = settings.resolved_catalog_url
    scheme = urlsplit(url).scheme.split("+")[0]
    if scheme == "sqlite":
        # SQLAlchemy's form: sqlite:///relative/path, sqlite:////absolute/path.
        path = Path(url.split(":///", 1)[1]).expanduser().resolve()
        return LakeLocation(
            "sqlite", str(path), settings.resolved_data_url, in_home=settings.data_url is None
        )
    if scheme in ("postgresql", "postgres"):
        # libpq takes the URL itself; SQLAlchemy's driver suffix is not part of it.
        libpq = "postgresql" + url[url.index("://") :]
        return LakeLocation(
            "postgres", libpq, settings.resolved_data_url, in_home=settings.data_url is None
        )
    raise ConfigurationError(
        f"QUARRY_CATALOG_URL must be a sqlite:/// or postgresql:// URL, got {url!r}"
    )


def connect(settings: Settings) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection with the lake attached as `lake` (created on first
    use, with every table of warehouse.schemas). UTC session time zone. Close it when the
    process is done with the lake."""
    where = location(settings)
    refuse_delta_home(settings)
    # Where a sort or aggregate past the memory limit spills: the role's own home, not
    # DuckDB's default `.tmp` in whatever directory the process started in.
    spill = settings.home.resolve() / "duckdb-spill"
    spill.mkdir(parents=True, exist_ok=True)
    scanner = "sqlite_scanner" if where.catalog_kind == "sqlite" else "postgres_scanner"
    needed = ["ducklake", scanner, *(["httpfs"] if where.on_s3 else [])]
    con = duckdb.connect(
        ":memory:",
        config={
            **extensions.connection_config(needed, verify=settings.duckdb_verify_extensions),
            "threads": settings.duckdb_threads,
            "memory_limit": settings.duckdb_memory_limit,
            "temp_directory": str(spill),
        },
    )
    try:
        # GLOBAL: every cursor of the connection is a session of its own.
        con.execute("SET GLOBAL TimeZone = 'UTC'")
        # The lake's Parquet files never change once written.
        con.execute("SET GLOBAL parquet_metadata_cache = true")
        extensions.load(con, *needed)
        if where.on_s3:
            _create_s3_secret(con, settings, where.data_path)
        else:
            Path(where.data_path).mkdir(parents=True, exist_ok=True)
        if where.sqlite_file is not None:
            where.sqlite_file.parent.mkdir(parents=True, exist_ok=True)
        # Readers must not wait for writers: the write lock is taken only to create the
        # catalog or tables, which two processes starting together must not do twice.
        if _catalog_exists(where):
            _attach(con, where)
            if missing_ddl(con):
                with write_lock(settings):
                    ensure_tables(con)
        else:
            with write_lock(settings):
                _attach(con, where)
                ensure_tables(con)
    except BaseException:
        con.close()
        raise
    return con


def quiet_cursor(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """A new cursor of `con` that draws no progress bar: a long query (a large export)
    would draw it on stdout. A per-session setting: DuckDB refuses it globally."""
    cursor = con.cursor()
    cursor.execute("SET enable_progress_bar = false")
    return cursor


def _catalog_exists(where: LakeLocation) -> bool:
    """Whether the catalog was created already (by any process)."""
    if where.sqlite_file is not None:
        return where.sqlite_file.exists() and where.sqlite_file.stat().st_size > 0
    import psycopg

    try:
        with psycopg.connect(where.catalog, connect_timeout=10) as pg:
            row = pg.execute("SELECT to_regclass('ducklake_metadata') IS NOT NULL").fetchone()
    except psycopg.Error as exc:
        raise _unreachable(where, exc) from exc
    return bool(row and row[0])


def _attach(con: duckdb.DuckDBPyConnection, where: LakeLocation) -> None:
    options = [f"DATA_PATH {_literal(where.data_path)}"]
    if where.in_home:
        # The catalog keeps the data folder's absolute path and file paths relative to it:
        # a home moved or restored elsewhere reads its own folder.
        options.append("OVERRIDE_DATA_PATH true")
    if where.catalog_kind == "sqlite":
        options += ["META_JOURNAL_MODE 'WAL'", f"META_BUSY_TIMEOUT {SQLITE_BUSY_TIMEOUT_MS}"]
    target = f"ducklake:{where.catalog_kind}:{where.catalog}"
    deadline = time.monotonic() + ATTACH_RETRY_SECONDS
    delay = 0.05
    while True:
        try:
            con.execute(f"ATTACH {_literal(target)} AS {LAKE} ({', '.join(options)})")
            return
        except duckdb.Error as exc:
            # A reader attaching while another process commits to a SQLite catalog may
            # find it locked for a moment.
            if "locked" not in str(exc).lower() or time.monotonic() > deadline:
                raise _unreachable(where, exc) from exc
            time.sleep(delay)
            delay = min(delay * 2, 1.0)


def _unreachable(where: LakeLocation, exc: Exception) -> ConfigurationError:
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    shown = where.catalog if where.catalog_kind == "sqlite" else _without_password(where.catalog)
    return ConfigurationError(f"cannot open the warehouse catalog {shown}: {first}")


def _without_password(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    return url.replace(f":{parts.password}@", ":***@", 1)


def _create_s3_secret(con: duckdb.DuckDBPyConnection, settings: Settings, data_path: str) -> None:
    """An S3 secret scoped to the data bucket, with the credentials boto3 finds (the
    standard AWS variables, profiles, instance roles) and the configured endpoint."""
    import boto3

    session = boto3.Session(region_name=settings.s3_region)
    credentials = session.get_credentials()
    options = ["TYPE s3", f"SCOPE {_literal('s3://' + urlsplit(data_path).netloc)}"]
    if credentials is not None:
        frozen = credentials.get_frozen_credentials()
        options += [
            f"KEY_ID {_literal(frozen.access_key)}",
            f"SECRET {_literal(frozen.secret_key)}",
        ]
        if frozen.token:
            options.append(f"SESSION_TOKEN {_literal(frozen.token)}")
    region = settings.s3_region or session.region_name
    if region:
        options.append(f"REGION {_literal(region)}")
    if settings.s3_endpoint_url:
        endpoint = urlsplit(settings.s3_endpoint_url)
        options += [
            f"ENDPOINT {_literal(endpoint.netloc)}",
            f"USE_SSL {'true' if endpoint.scheme == 'https' else 'false'}",
            # S3-compatible servers (MinIO, moto) rarely serve virtual-host buckets.
            "URL_STYLE 'path'",
        ]
    con.execute(f"CREATE OR REPLACE SECRET quarry_s3 ({', '.join(options)})")


def refuse_delta_home(settings: Settings) -> None:
    """A home whose warehouse an earlier Quarry wrote in Delta Lake cannot be read: say so
    in one line, with the way to rebuild it."""
    if settings.catalog_url is not None or not settings.warehouse_dir.is_dir():
        return
    if any(settings.warehouse_dir.glob("*/_delta_log")):
        raise ConfigurationError(
            f"{settings.warehouse_dir} holds Delta Lake tables written by an earlier Quarry; "
            "the warehouse is DuckLake now. Move that folder away (the registry is kept) and "
            "run `quarry sync --full` to rebuild the warehouse from the platforms."
        )


def _literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


# The PostgreSQL advisory lock every Quarry process takes to write the lake.
WRITE_LOCK = "quarry.warehouse"


class _HeldWriteLocks(threading.local):
    """The catalogs whose write lock the current thread holds."""

    def __init__(self) -> None:
        self.catalogs: set[str] = set()


_held_write_locks = _HeldWriteLocks()


@contextmanager
def write_lock(settings: Settings) -> Iterator[None]:
    """Exclusive right to write the lake, across processes and hosts, for the block.

    SQLite catalog: an flock on a file beside it (every writer shares that machine's disk).
    PostgreSQL catalog: a session advisory lock in that database, held by a connection of
    its own for the block.

    Re-entrant in the thread that holds it: a block under the lock may open the process's
    first lake connection, which takes the lock to create the catalog or a missing table
    (maintenance on a new home does); a second flock or advisory lock would wait for the
    first one, held by the same thread, until the timeout."""
    where = location(settings)
    held = _held_write_locks.catalogs
    if where.catalog in held:
        yield
        return
    if where.sqlite_file is not None:
        lock = _file_lock(where.sqlite_file.with_name(where.sqlite_file.name + ".write-lock"))
    else:
        lock = advisory_lock(where.catalog, WRITE_LOCK, LOCK_TIMEOUT_SECONDS)
    asked = time.perf_counter()
    with lock:
        TALLY.observe("quarry_lake_write_lock_wait_seconds", {}, time.perf_counter() - asked)
        held.add(where.catalog)
        try:
            yield
        finally:
            held.discard(where.catalog)


@contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        deadline = time.monotonic() + LOCK_TIMEOUT_SECONDS
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    message = f"the warehouse write lock {path} is held too long"
                    raise TimeoutError(message) from None
                time.sleep(0.02)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


# The author of commits that are no store's own (exchange rates).
GLOBAL_AUTHOR = "global"
# SQL: the stores (or "global") whose rows the commit of a `snapshots()` row wrote.
AUTHORS = "string_split(coalesce(author, ''), ',')"


def commit_author(stores: str | Iterable[str]) -> str:
    """The author of a commit: the store id (or "global"), or the ids of the stores it
    writes, comma-separated (store ids are [a-z0-9_]). Read back with AUTHORS."""
    if isinstance(stores, str):
        return stores
    return ",".join(sorted(set(stores)))


class Lake:
    """A process's handle on the lake: one DuckDB connection, attached on first use, whose
    cursors serve any thread, and write transactions under the write lock."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._con: duckdb.DuckDBPyConnection | None = None
        self._guard = threading.Lock()

    @property
    def connection(self) -> duckdb.DuckDBPyConnection:
        with self._guard:
            if self._con is None:
                self._con = connect(self.settings)
            return self._con

    def cursor(self) -> duckdb.DuckDBPyConnection:
        """A new cursor of the lake's connection, for one thread; close it when done."""
        return quiet_cursor(self.connection)

    @contextmanager
    def transaction(
        self, *, author: str | Iterable[str], message: str
    ) -> Iterator[duckdb.DuckDBPyConnection]:
        """A cursor inside one write transaction, committed when the block ends (rolled back
        if it raises), holding the lake's write lock throughout. `author` and `message`
        label the snapshot the commit makes: the store id, the ids of the stores a fleet
        batch writes together (commit_author), or "global"; and the operation. A
        transaction that changes nothing makes no snapshot."""
        cursor = self.cursor()
        try:
            with write_lock(self.settings), transaction(cursor):
                cursor.execute(
                    bind(f"CALL {LAKE}.set_commit_message(?, ?)", [commit_author(author), message])
                )
                yield cursor
        finally:
            cursor.close()

    def version(self) -> int:
        """The lake's newest snapshot id."""
        cursor = self.cursor()
        try:
            row = cursor.execute(f"SELECT id FROM {LAKE}.current_snapshot()").fetchone()
        finally:
            cursor.close()
        assert row is not None
        return int(row[0])

    def close(self) -> None:
        with self._guard:
            if self._con is not None:
                self._con.close()
                self._con = None


_shared: dict[tuple[object, ...], Lake] = {}
_shared_guard = threading.Lock()


def shared_lake(settings: Settings) -> Lake:
    """The process's Lake for the warehouse of `settings`, made on first use and kept
    until the process exits or asks for another warehouse. A Dagster run builds its
    resources again for every step: a Lake of its own each time paid the extensions' load
    and the attach (about 0.2 s) for every step of every run."""
    key = (
        settings.resolved_catalog_url,
        settings.resolved_data_url,
        settings.s3_endpoint_url,
        settings.s3_region,
        settings.duckdb_threads,
        settings.duckdb_memory_limit,
        settings.home,
    )
    with _shared_guard:
        lake = _shared.get(key)
        if lake is None:
            # A process works on one warehouse; one it left (a test's home) is closed
            # rather than kept with its DuckDB buffers for the life of the process.
            for old in _shared.values():
                old.close()
            _shared.clear()
            lake = _shared[key] = Lake(settings)
        return lake


@atexit.register
def _close_shared() -> None:
    with _shared_guard:
        for lake in _shared.values():
            lake.close()
        _shared.clear()
