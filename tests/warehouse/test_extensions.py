"""DuckDB's extensions: loaded from Quarry's packages, with DuckDB's signature check off
unless QUARRY_DUCKDB_VERIFY_EXTENSIONS asks for it, and always on for an extension that
must come from DuckDB's repository."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from quarry.settings import Settings, load_settings
from warehouse import extensions
from warehouse.lake import connect


def _tampered_copy(tmp_path: Path) -> Path:
    """The packaged ducklake extension with the last byte of its signature changed."""
    original = extensions.packaged_file("ducklake")
    assert original is not None, "the duckdb-extension-ducklake package is not installed"
    data = bytearray(original.read_bytes())
    data[-1] ^= 0xFF
    tampered = tmp_path / "ducklake.duckdb_extension"
    tampered.write_bytes(bytes(data))
    return tampered


def test_duckdb_checks_the_signature_only_when_asked(tmp_path: Path) -> None:
    tampered = _tampered_copy(tmp_path)
    checked = duckdb.connect(config=extensions.connection_config(["ducklake"], verify=True))
    with pytest.raises(duckdb.Error, match="signature"):
        checked.execute(f"LOAD '{tampered}'")
    unchecked = duckdb.connect(config=extensions.connection_config(["ducklake"], verify=False))
    unchecked.execute(f"LOAD '{tampered}'")
    loaded = unchecked.execute(
        "SELECT loaded FROM duckdb_extensions() WHERE extension_name = 'ducklake'"
    ).fetchone()
    assert loaded == (True,)


def test_an_extension_from_duckdbs_repository_is_always_checked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    found = extensions.packaged_file
    monkeypatch.setattr(
        extensions, "packaged_file", lambda name: None if name == "httpfs" else found(name)
    )
    assert "allow_unsigned_extensions" not in extensions.connection_config(
        ["ducklake", "httpfs"], verify=False
    )
    assert extensions.connection_config(["ducklake"], verify=False)["allow_unsigned_extensions"]


@pytest.mark.parametrize("verify", [False, True])
def test_the_lake_opens_either_way(
    quarry_env: Settings, monkeypatch: pytest.MonkeyPatch, verify: bool
) -> None:
    monkeypatch.setenv("QUARRY_DUCKDB_VERIFY_EXTENSIONS", str(verify).lower())
    con = connect(load_settings())
    try:
        unsigned = con.execute("SELECT current_setting('allow_unsigned_extensions')").fetchone()
        assert unsigned == (not verify,)
        assert con.execute("SELECT count(*) FROM lake.orders").fetchone() == (0,)
    finally:
        con.close()
