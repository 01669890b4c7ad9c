"""Export runs in this process over the known warehouse: the file's rows are the record
endpoints' rows for the same filters, the hostile store comes out inert in every format,
a failed delivery keeps the file, and cleanup removes exactly one store's files."""

from __future__ import annotations

import csv
import io
import zipfile
from pathlib import Path
from typing import Any

import openpyxl
import pytest

from exports.files import produce
from exports.files.cleanup import remove_expired_files, remove_files_for_store
from exports.files.csv_copy import copy_csv
from exports.files.neutralise import neutralise
from registry.models import ExportJob
from tests.api.world import HOSTILE_TEXTS, World
from tests.exports.conftest import apply_yaml, run_config, stored

ISO = "%Y-%m-%dT%H:%M:%S.%fZ"  # the record endpoints' timestamps
SALES_QUERY = "FROM sales SHOW total_sales SINCE 2023-01-01 UNTIL 2025-01-01"
INERT_START = ("=", "+", "-", "@", "\t", "\r")


@pytest.fixture(scope="module")
def configs(export_world: World) -> dict[str, str]:
    base = {"entity_type": "orders", "format_options": {"date_format": ISO}}
    hostile_columns = ["id", "customer_name", "tags", "total_price"]
    return apply_yaml(
        export_world,
        "a",
        {
            "exports": [
                {**base, "name": "Paid A1", "format": "csv", "stores": ["st_a1"],
                 "filters": {"financial_status": ["paid", "pending"],
                             "created_at_min": "2024-01-02"}},
                {**base, "name": "Hostile csv", "format": "csv", "stores": ["st_a3"],
                 "columns": hostile_columns},
                {**base, "name": "Hostile xlsx", "format": "xlsx", "stores": ["st_a3"],
                 "columns": hostile_columns},
                {"name": "Hostile zip", "entity_type": "bundle", "format": "zip",
                 "stores": ["st_a3"], "format_options": {"member_format": "xlsx"},
                 "parts": [{"entity_type": "orders", "columns": hostile_columns},
                           {"entity_type": "customers"},
                           {"name": "sales", "entity_type": "query", "query": SALES_QUERY}]},
                {"name": "Hostile zip csv", "entity_type": "bundle", "format": "zip",
                 "stores": ["st_a3"],
                 "parts": [{"entity_type": "orders", "columns": hostile_columns}]},
                {**base, "name": "Broken delivery", "format": "csv", "stores": ["st_a2"],
                 "destination": {"kind": "local", "settings": {"folder": "blocked/sub"}}},
            ]
        },
    )  # fmt: skip


def read_csv(path: Path) -> list[list[str]]:
    with path.open(encoding="utf-8", newline="") as handle:  # keep CR inside fields
        return list(csv.reader(handle))


def text(value: Any) -> str:
    if value is None:
        return ""
    if hasattr(value, "strftime"):
        return value.strftime(ISO)
    return neutralise(value) if isinstance(value, str) else str(value)


def test_rows_equal_the_record_endpoints(export_world: World, configs: dict[str, str]) -> None:
    job_id, failure = run_config(export_world, configs["Paid A1"])
    assert failure is None
    rows = read_csv(stored(export_world.settings, export_world, job_id))
    expected = [
        r for r in export_world.records("orders", "st_a1")
        if r["financial_status"] in ("paid", "pending")
        and r["created_at"].isoformat() >= "2024-01-02"
    ]  # fmt: skip
    assert rows[0][:3] == ["ID", "Store ID", "Order"]
    assert [r[0] for r in rows[1:]] == [r["id"] for r in expected]
    fields = [f for f in ("id", "store_id", "order_name", "created_at", "total_price")]
    columns = [rows[0].index(t) for t in ("ID", "Store ID", "Order", "Created at", "Total price")]
    for got, want in zip(rows[1:], expected, strict=True):
        assert [got[i] for i in columns] == [text(want[f]) for f in fields]
    with export_world.registry.session() as session:
        job = session.get(ExportJob, job_id)
        assert job is not None and job.status == "completed" and job.file_name.endswith(".csv")
    # A job's file never changes: read-only, as is a local delivery linked to it.
    mode = stored(export_world.settings, export_world, job_id).stat().st_mode
    assert mode & 0o777 == 0o444


def test_a_record_csv_is_written_by_copy_as_the_writer_would(
    export_world: World, configs: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    copied: list[int | None] = []

    def spy(*args: Any) -> int | None:
        copied.append(copy_csv(*args))
        return copied[-1]

    monkeypatch.setattr(produce, "copy_csv", spy)
    by_copy, failure = run_config(export_world, configs["Hostile csv"])
    assert failure is None and copied == [len(HOSTILE_TEXTS)]
    monkeypatch.setattr(produce, "copy_csv", lambda *args: None)
    by_writer, failure = run_config(export_world, configs["Hostile csv"])
    assert failure is None
    settings = export_world.settings
    assert (
        stored(settings, export_world, by_copy).read_bytes()
        == stored(settings, export_world, by_writer).read_bytes()
    )


def test_hostile_store_is_inert_in_csv(export_world: World, configs: dict[str, str]) -> None:
    job_id, failure = run_config(export_world, configs["Hostile csv"])
    assert failure is None
    rows = read_csv(stored(export_world.settings, export_world, job_id))[1:]
    assert [r[1] for r in rows] == [neutralise(t) for t in HOSTILE_TEXTS]
    assert all(
        not cell.startswith(("=", "+", "-", "@", "\t", "\r")) for r in rows for cell in r[1:3]
    )


def _inert_sheet(sheet: Any) -> list[str]:
    names = []
    for row in sheet.iter_rows(min_row=2):
        for cell in row:
            if cell.data_type == "f":
                raise AssertionError(f"formula in {cell.coordinate}")
            if isinstance(cell.value, str) and cell.value.startswith(("=", "+", "-", "@", "\t")):
                assert cell.quotePrefix, cell.coordinate
        names.append(row[1].value)
    return names


def test_hostile_store_is_inert_in_xlsx(export_world: World, configs: dict[str, str]) -> None:
    job_id, failure = run_config(export_world, configs["Hostile xlsx"], max_rows_per_sheet=20)
    assert failure is None
    book = openpyxl.load_workbook(stored(export_world.settings, export_world, job_id))
    assert len(book.worksheets) == -(-len(HOSTILE_TEXTS) // 20)
    names = [n for ws in book.worksheets for n in _inert_sheet(ws)]
    assert len(names) == len(HOSTILE_TEXTS)


def test_hostile_store_is_inert_in_zip(export_world: World, configs: dict[str, str]) -> None:
    for name, member in (("Hostile zip", "orders.xlsx"), ("Hostile zip csv", "orders.csv")):
        job_id, failure = run_config(export_world, configs[name])
        assert failure is None
        with zipfile.ZipFile(stored(export_world.settings, export_world, job_id)) as archive:
            assert archive.testzip() is None
            assert member in archive.namelist()
            data = archive.read(member)
        if member.endswith(".csv"):
            rows = read_csv_bytes(data)[1:]
            assert [r[1] for r in rows] == [neutralise(t) for t in HOSTILE_TEXTS]
        else:
            book = openpyxl.load_workbook(io.BytesIO(data))
            assert len(_inert_sheet(book.worksheets[0])) == len(HOSTILE_TEXTS)


def read_csv_bytes(data: bytes) -> list[list[str]]:
    return list(csv.reader(io.StringIO(data.decode("utf-8"), newline="")))


def test_a_failed_delivery_keeps_the_file(export_world: World, configs: dict[str, str]) -> None:
    # A file where the folder should be: the local destination cannot write there.
    (export_world.settings.home / "blocked").write_text("not a folder")
    job_id, failure = run_config(export_world, configs["Broken delivery"])
    assert failure is not None and "delivery failed" in failure and "local" in failure
    with export_world.registry.session() as session:
        job = session.get(ExportJob, job_id)
        assert job is not None and job.status == "failed" and job.error == failure
        assert job.file_name is not None
    assert stored(export_world.settings, export_world, job_id).is_file()


def test_cleanup_removes_exactly_one_stores_files(
    export_world: World, configs: dict[str, str]
) -> None:
    a1, _ = run_config(export_world, configs["Paid A1"])
    a3, _ = run_config(export_world, configs["Hostile csv"])
    settings = export_world.settings
    a1_file, a3_file = stored(settings, export_world, a1), stored(settings, export_world, a3)
    removed = remove_files_for_store(settings, export_world.registry, "st_a1", "store_resynced")
    assert a1 in removed and a3 not in removed
    assert not a1_file.exists() and a3_file.exists()
    with export_world.registry.session() as session:
        job = session.get(ExportJob, a1)
        assert job is not None and job.status == "completed" and job.file_removed_at is not None
    assert remove_files_for_store(settings, export_world.registry, "st_a1", "store_removed") == []
    assert a3 not in remove_expired_files(settings, export_world.registry, 1)
    assert a3 in remove_expired_files(settings, export_world.registry, 0)


def test_an_export_reads_under_the_export_memory_limit(
    export_world: World, configs: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The run's DuckDB is its own, bounded by QUARRY_EXPORT_DUCKDB_MEMORY_LIMIT (a sort past
    # it spills into the home's duckdb-spill folder) rather than by the readers' limit.
    limits: list[str] = []

    def spy(*args: Any) -> int | None:
        cursor = args[0]
        ((limit,),) = cursor.execute("SELECT current_setting('memory_limit')").fetchall()
        ((spill,),) = cursor.execute("SELECT current_setting('temp_directory')").fetchall()
        limits.append(limit)
        assert Path(spill) == export_world.settings.home.resolve() / "duckdb-spill"
        return copy_csv(*args)

    monkeypatch.setattr(produce, "copy_csv", spy)
    assert export_world.settings.export_duckdb_memory_limit == "400MB"
    job_id, failure = run_config(export_world, configs["Paid A1"])
    assert failure is None and len(limits) == 1
    # DuckDB shows the limit in its own units: 400MB is 381.4 MiB.
    assert limits[0] == "381.4 MiB"
    assert stored(export_world.settings, export_world, job_id).stat().st_size > 0
