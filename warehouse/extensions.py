"""DuckDB extensions the warehouse needs, loaded from the installed `duckdb-extension-*`
packages.

DuckDB's extension repository is not reachable where Quarry often runs (offline machines,
locked-down hosts), and an extension DuckDB fetches on its own at first use fails there in
the middle of a query. So connections are made with auto-install and auto-load off, and
every extension is LOADed explicitly from the file its PyPI package ships. DuckDB checks
each file's signature on LOAD (allow_unsigned_extensions stays off). Where a package is
missing, DuckDB's own INSTALL is tried instead, which needs its repository.
"""

from __future__ import annotations

import importlib
import logging
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
