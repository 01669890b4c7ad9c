"""Parquet and JSON Lines files over the known warehouse: typed and exact, in the
configured zone, with their schema (or nothing) when no row matches; zip members in
either format; the media types their downloads carry."""

from __future__ import annotations

import json
import zipfile
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from zoneinfo import ZoneInfo

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from exports.files.formats import CONTENT_TYPES, EXTENSIONS, MEMBER_FORMATS
from tests.api.world import World
from tests.exports.conftest import apply_yaml, run_config, stored

BERLIN = ZoneInfo("Europe/Berlin")
COLUMNS = ["id", "order_name", "created_at", "fulfillment_status", "total_price",
           {"field": "line_item_count", "title": "lines"}]  # fmt: skip
SALES_QUERY = "FROM sales SHOW total_sales SINCE 2023-01-01 UNTIL 2025-01-01"


@pytest.fixture(scope="module")
def configs(export_world: World) -> dict[str, str]:
    base = {"entity_type": "orders", "stores": ["st_a1"], "columns": COLUMNS}
    berlin = {"time_zone": "Europe/Berlin"}
    none = {"financial_status": "voided"}
    return apply_yaml(
        export_world,
        "a",
        {
            "exports": [
                {**base, "name": "Parquet", "format": "parquet"},
                {**base, "name": "Parquet none", "format": "parquet", "filters": none},
                {**base, "name": "JSONL", "format": "jsonl", "format_options": berlin},
                {**base, "name": "JSONL none", "format": "jsonl", "filters": none},
                {"name": "Query JSONL", "entity_type": "query", "format": "jsonl",
                 "stores": ["st_a1"], "query": SALES_QUERY},
                {"name": "Zip parquet", "entity_type": "bundle", "format": "zip",
                 "stores": ["st_a1"], "format_options": {"member_format": "parquet"},
                 "parts": [{"entity_type": "orders", "columns": COLUMNS},
                           {"name": "sales", "entity_type": "query", "query": SALES_QUERY}]},
                {"name": "Zip jsonl", "entity_type": "bundle", "format": "zip",
                 "stores": ["st_a1"], "format_options": {"member_format": "jsonl"},
                 "parts": [{"entity_type": "customers"}]},
            ]
        },
    )  # fmt: skip


def _file(world: World, config_id: str) -> Path:
    job_id, failure = run_config(world, config_id)
    assert failure is None, failure
    return stored(world.settings, world, job_id)


def test_parquet_is_typed_and_exact(export_world: World, configs: dict[str, str]) -> None:
    path = _file(export_world, configs["Parquet"])
    assert path.name.endswith(".parquet")
    table = pq.read_table(path)
    assert table.schema.names == ["id", "order_name", "created_at", "fulfillment_status",
                                  "total_price", "lines"]  # fmt: skip
    assert table.schema.field("total_price").type == pa.decimal128(18, 2)
    assert table.schema.field("created_at").type == pa.timestamp("us", tz="UTC")
    schema = pq.ParquetFile(path).metadata.schema
    assert json.loads(schema.column(2).logical_type.to_json())["isAdjustedToUTC"] is True
    assert json.loads(schema.column(4).logical_type.to_json()) == {
        "Type": "Decimal",
        "precision": 18,
        "scale": 2,
    }
    expected = export_world.records("orders", "st_a1")
    assert table.column("id").to_pylist() == [r["id"] for r in expected]
    assert table.column("total_price").to_pylist() == [r["total_price"] for r in expected]
    assert table.column("created_at").to_pylist() == [r["created_at"] for r in expected]
    assert table.column("fulfillment_status").to_pylist() == [
        r.get("fulfillment_status") for r in expected
    ]


def test_zero_row_parquet_keeps_its_schema(export_world: World, configs: dict[str, str]) -> None:
    table = pq.read_table(_file(export_world, configs["Parquet none"]))
    assert table.num_rows == 0
    assert table.schema.field("total_price").type == pa.decimal128(18, 2)
    assert table.schema.field("created_at").type == pa.timestamp("us", tz="UTC")


def test_jsonl_is_exact_in_the_configured_zone(
    export_world: World, configs: dict[str, str]
) -> None:
    lines = _file(export_world, configs["JSONL"]).read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    expected = export_world.records("orders", "st_a1")
    assert [r["id"] for r in records] == [r["id"] for r in expected]
    for got, want in zip(records, expected, strict=True):
        assert got["total_price"] == format(want["total_price"], "f")  # a string, every digit
        assert got["created_at"] == want["created_at"].astimezone(BERLIN).isoformat()
        assert got["fulfillment_status"] == want.get("fulfillment_status")
        assert got["lines"] == want["line_item_count"]
    assert records[3]["total_price"] == "99999999.99"
    assert records[3]["created_at"] == "2024-01-15T13:30:45.123456+01:00"
    # Summer time: the offset follows the instant.
    summer = next(r for r in records if r["created_at"].startswith("2024-03-10"))
    assert datetime.fromisoformat(summer["created_at"]).utcoffset() is not None


def test_zero_row_jsonl_is_empty(export_world: World, configs: dict[str, str]) -> None:
    assert _file(export_world, configs["JSONL none"]).read_bytes() == b""


def test_query_jsonl_keeps_decimals_as_text(export_world: World, configs: dict[str, str]) -> None:
    lines = _file(export_world, configs["Query JSONL"]).read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    assert records and all(isinstance(r["total_sales"], str) for r in records)
    assert all(Decimal(r["total_sales"]) == Decimal(r["total_sales"]) for r in records)


def test_zip_members_in_parquet_and_jsonl(export_world: World, configs: dict[str, str]) -> None:
    with zipfile.ZipFile(_file(export_world, configs["Zip parquet"])) as archive:
        names = archive.namelist()
        assert "orders.parquet" in names and "sales.parquet" in names
        with archive.open("orders.parquet") as member:
            orders = pq.read_table(pa.BufferReader(member.read()))
        assert orders.num_rows == len(export_world.records("orders", "st_a1"))
    with zipfile.ZipFile(_file(export_world, configs["Zip jsonl"])) as archive:
        assert "customers.jsonl" in archive.namelist()
        customers = archive.read("customers.jsonl").decode().splitlines()
        assert len(customers) == len(export_world.records("customers", "st_a1"))


def test_formats_are_declared_once() -> None:
    assert CONTENT_TYPES["parquet"] == "application/vnd.apache.parquet"
    assert CONTENT_TYPES["jsonl"] == "application/jsonl"
    assert (EXTENSIONS["parquet"], EXTENSIONS["jsonl"]) == (".parquet", ".jsonl")
    assert set(MEMBER_FORMATS) == {"csv", "xlsx", "parquet", "jsonl"}
