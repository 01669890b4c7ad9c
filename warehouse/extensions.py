"""DuckDB extensions the warehouse needs, loaded from the installed `duckdb-extension-*`
packages.

DuckDB's extension repository is not reachable where Quarry often runs (offline machines,
locked-down hosts), and an extension DuckDB fetches on its own at first use fails there in
the middle of a query. So connections are made with auto-install and auto-load off, and
every extension is LOADed explicitly from the file its PyPI package ships. Where a package is
missing, DuckDB's own INSTALL is tried instead, which needs its repository.

DuckDB's signature check of a packaged file is skipped unless QUARRY_DUCKDB_VERIFY_EXTENSIONS
asks for it: it hashes the whole file (about 35 MB) on every LOAD, 110-150 ms per extension
and process (measured: 240 ms -> 10 ms for the two every lake connection loads), paid by
each run worker, step process and CLI command. The packaged files are installed by pip
beside DuckDB's own library, which nothing checks on load: whoever could swap one could swap
the other. An extension from DuckDB's repository is always checked.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Iterable
from functools import cache
from pathlib import Path

import duckdb

log = logging.getLogger(__name__)

# Extension name -> the module of the PyPI package that ships it.
PACKAGES: dict[str, str] = {
    "ducklake": "duckdb_extension_ducklake",
    "sqlite_scanner": "duckdb_extension_sqlite_scanner",
    "postgres_scanner": "duckdb_extension_postgres_scanner",
    "httpfs": "duckdb_extension_httpfs",
}

# Connection settings that keep DuckDB from fetching or loading anything by itself.
NO_AUTOLOAD: dict[str, str | bool] = {
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
}


def connection_config(names: Iterable[str], *, verify: bool) -> dict[str, str | bool]:
    """The settings of a connection that will LOAD `names` (see load): NO_AUTOLOAD, and
    DuckDB's signature check off when every one of them comes from its package and
    `verify` (QUARRY_DUCKDB_VERIFY_EXTENSIONS) is false."""
    config = dict(NO_AUTOLOAD)
    if not verify and all(packaged_file(name) is not None for name in names):
        config["allow_unsigned_extensions"] = True
    return config


@cache
def packaged_file(name: str) -> Path | None:
    """The extension file of `name` in its installed package, for this DuckDB's version;
    None when the package is not installed or ships no file for this version."""
    try:
        module = importlib.import_module(PACKAGES[name])
    except ImportError:
        return None
    version = duckdb.__version__
    for root in map(Path, module.__path__):
        for candidate in root.rglob(f"{name}.duckdb_extension"):
            if f"v{version}" in candidate.parts:
                return candidate
    return None


def load(con: duckdb.DuckDBPyConnection, *names: str) -> None:
    """LOAD each extension of `names` into `con`, from its package when installed."""
    for name in names:
        path = packaged_file(name)
        if path is not None:
            con.execute(f"LOAD '{path}'")
            continue
        log.warning(
            "DuckDB extension %s: package %s is not installed for DuckDB %s; "
            "installing it from DuckDB's repository",
            name,
            PACKAGES[name].replace("_", "-"),
            duckdb.__version__,
        )
        con.execute(f"INSTALL {name}")
        con.execute(f"LOAD {name}")
