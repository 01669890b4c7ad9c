"""warehouse.records and warehouse.record_filters without HTTP: parameter parsing, the
filter syntax, and reads over plain DuckDB tables in the warehouse schemas."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import duckdb
import pyarrow as pa
import pytest

from quarry.errors import InvalidRequest, NotFound
from warehouse.record_filters import NULL, parse_instant, split_items
from warehouse.records import (
    get_record,
    list_records,
    parse_fields,
    parse_list_params,
    parse_record_params,
    record_dataset,
)
from warehouse.schemas import TABLES

ORDERS = record_dataset("orders")


def _row(n: int, **values: Any) -> dict[str, Any]:
    return {
        "id": f"o{n}",
        "store_id": "st_1" if n < 5 else "st_2",
        "created_at": datetime(2024, 1, n, tzinfo=UTC),
        "total_price": Decimal("12.30"),
        "financial_status": "paid",
        **values,
    }


@pytest.fixture
def cursor() -> Any:
    rows = [
        _row(1, customer_name='He said "hi", twice'),
        _row(2, total_price=Decimal("0.05"), financial_status=None),
        _row(3, line_item_count=4),
        _row(4, created_at=datetime(2024, 1, 3, tzinfo=UTC)),  # ties o3: id decides
        _row(6),
    ]
    connection = duckdb.connect()
    connection.execute("SET TimeZone = 'America/Los_Angeles'")  # output must not depend on it
    table = pa.Table.from_pylist(rows, schema=TABLES["orders"].schema)
    connection.register("orders", table)
    yield connection
    connection.close()


@pytest.mark.parametrize(
    ("raw", "items"),
    [
        ("a", ["a"]),
        ("a,b", ["a", "b"]),
        ('"a,b"', ["a,b"]),
        ('"a,b",c', ["a,b", "c"]),
        ('""', [""]),
        ('"say ""hi"""', ['say "hi"']),
        ("null", [NULL]),
        ('"null"', ["null"]),
        ("NULL", ["NULL"]),
        ('a"b', ['a"b']),
        (" a ", [" a "]),
    ],
)
def test_split_items(raw: str, items: list[object]) -> None:
    assert split_items(raw, "p") == items


@pytest.mark.parametrize("raw", ["", "a,", ",a", "a,,b", '"open', '"a"b', '"a",'])
def test_split_items_refuses(raw: str) -> None:
    with pytest.raises(InvalidRequest) as caught:
        split_items(raw, "p")
    assert caught.value.errors[0]["field"] == "p"


@pytest.mark.parametrize(
    ("text", "instant", "is_date"),
    [
        ("2024-05-01", datetime(2024, 5, 1, tzinfo=UTC), True),
        ("2024-05-01T10:00:00Z", datetime(2024, 5, 1, 10, tzinfo=UTC), False),
        ("2024-05-01T12:00:00+02:00", datetime(2024, 5, 1, 10, tzinfo=UTC), False),
        ("2024-05-01T12:00:00 02:00", datetime(2024, 5, 1, 10, tzinfo=UTC), False),
        ("2024-05-01T10:00:00", datetime(2024, 5, 1, 10, tzinfo=UTC), False),
        ("2024-05-01T10:00:00.5Z", datetime(2024, 5, 1, 10, 0, 0, 500000, tzinfo=UTC), False),
    ],
)
def test_parse_instant(text: str, instant: datetime, is_date: bool) -> None:
    assert parse_instant(text, "p") == (instant, is_date)


@pytest.mark.parametrize("text", ["", "now", "2024-02-30", "0001-01-01T00:00:00+01:00"])
def test_parse_instant_refuses(text: str) -> None:
    with pytest.raises(InvalidRequest):
        parse_instant(text, "created_at_min")


def test_parse_fields() -> None:
    assert [f.name for f in parse_fields(ORDERS, ["total_price,id", " id "])] == [
        "total_price",
        "id",
    ]
    assert parse_fields(ORDERS, None) == ORDERS.record_fields
    with pytest.raises(InvalidRequest, match="order_count"):
        parse_fields(ORDERS, ["order_count"])


def test_parse_list_params_defaults_and_errors() -> None:
    query = parse_list_params(ORDERS, [])
    assert (query.page, query.page_size, query.store_ids, query.conditions) == (1, 50, None, ())
    with pytest.raises(InvalidRequest) as caught:
        parse_list_params(ORDERS, [("page_size", "251")])
    assert caught.value.errors == [
        {"field": "page_size", "message": "must be a whole number from 1 to 250, got '251'"}
    ]
    with pytest.raises(InvalidRequest, match="order_count"):
        parse_list_params(ORDERS, [("order_count", "1")])
    with pytest.raises(InvalidRequest, match="page"):
        parse_record_params(ORDERS, [("page", "1")])


def _ids(cursor: Any, params: list[tuple[str, str]], stores: tuple[str, ...] = ("st_1",)) -> list:
    page = list_records(cursor, parse_list_params(ORDERS, params), stores)
    return [json.loads(r)["id"] for r in page.records]


def test_list_orders_by_created_at_then_id_within_stores(cursor: Any) -> None:
    assert _ids(cursor, []) == ["o1", "o2", "o3", "o4"]
    assert _ids(cursor, [], ("st_1", "st_2")) == ["o1", "o2", "o3", "o4", "o6"]
    assert _ids(cursor, [], ()) == []


def test_paging_fetches_one_more_for_has_more(cursor: Any) -> None:
    first = list_records(cursor, parse_list_params(ORDERS, [("page_size", "2")]), ("st_1",))
    last = list_records(
        cursor, parse_list_params(ORDERS, [("page_size", "2"), ("page", "2")]), ("st_1",)
    )
    assert (len(first.records), first.has_more, len(last.records), last.has_more) == (
        2,
        True,
        2,
        False,
    )


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ([("financial_status", "null")], ["o2"]),
        ([("financial_status", "paid,null")], ["o1", "o2", "o3", "o4"]),
        ([("customer_name", '"He said ""hi"", twice"')], ["o1"]),
        ([("total_price", "0.05")], ["o2"]),
        ([("total_price", "0.050")], ["o2"]),
        ([("total_price", "0.051")], []),
        ([("line_item_count", "4")], ["o3"]),
        ([("created_at", "2024-01-03")], ["o3", "o4"]),
        ([("created_at_min", "2024-01-02"), ("created_at_max", "2024-01-03")], ["o2"]),
        ([("id", "o1' OR '1'='1")], []),
    ],
)
def test_filters(cursor: Any, params: list[tuple[str, str]], expected: list[str]) -> None:
    assert _ids(cursor, params) == expected


def test_rendering_is_exact(cursor: Any) -> None:
    fields = parse_fields(ORDERS, ["id,created_at,total_price,customer_name,line_item_count"])
    text = get_record(cursor, ORDERS, "o1", fields, ("st_1",))
    assert text == (
        '{"id":"o1","created_at":"2024-01-01T00:00:00.000000Z","total_price":12.30,'
        '"customer_name":"He said \\"hi\\", twice","line_item_count":null}'
    )


def test_get_record_outside_the_stores_is_not_found(cursor: Any) -> None:
    fields = ORDERS.record_fields
    with pytest.raises(NotFound) as unknown:
        get_record(cursor, ORDERS, "nope", fields, ("st_1",))
    with pytest.raises(NotFound) as foreign:
        get_record(cursor, ORDERS, "o6", fields, ("st_1",))
    assert unknown.value.detail == foreign.value.detail


def test_sales_is_not_a_record_dataset() -> None:
    with pytest.raises(NotFound):
        record_dataset("sales")
