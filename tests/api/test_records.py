"""GET /v1/{dataset}: paging, `fields`, time bounds, equality filters and the refusal of
anything unknown. Values, hostile text, by-id reads and store_ids: test_record_reads.py."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.conftest import Client, assert_problem, field_errors
from tests.api.expect import decode, get_all, ids, render
from tests.api.world import World
from warehouse.catalog import RECORD_DATASETS, dataset


@pytest.mark.parametrize("name", RECORD_DATASETS)
def test_default_page_is_every_record_field_in_catalog_order(
    client: Client, world: World, name: str
) -> None:
    response = client.get(f"/v1/{name}", key=world.keys["a_one"])
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.headers["cache-control"] == "no-store"
    body = decode(response.text)
    assert list(body) == ["data", "page", "page_size", "has_more"]
    assert (body["page"], body["page_size"], body["has_more"]) == (1, 50, False)
    expected = [render(r, name) for r in world.records(name, "st_a1")]
    assert body["data"] == expected
    ds = dataset(name)
    assert ds is not None
    for record in body["data"]:
        assert list(record) == [f.name for f in ds.record_fields]
        assert not any(f.aggregate_only and f.name in record for f in ds.fields)


def test_pages_neither_overlap_nor_skip(client: Client, world: World) -> None:
    expected = ids(world.records("orders", "st_a1", "st_a2", "st_a3"))
    seen: list[str] = []
    page = 1
    while True:
        body = client.get(
            "/v1/orders", key=world.keys["a_all"], params={"page": page, "page_size": 4}
        ).json()
        assert (body["page"], body["page_size"]) == (page, 4)
        seen += ids(body["data"])
        if not body["has_more"]:
            break
        assert len(body["data"]) == 4
        page += 1
    assert seen == expected
    # Two orders share created_at: id breaks the tie.
    assert seen.index("ord_st_a1_01") < seen.index("ord_st_a1_02")
    past_end = client.get("/v1/orders", key=world.keys["a_all"], params={"page": page + 1})
    assert past_end.json()["data"] == []


def test_has_more_on_an_exact_last_page(client: Client, world: World) -> None:
    body = client.get("/v1/orders", key=world.keys["a_one"], params={"page_size": 7}).json()
    assert len(body["data"]) == 7 and body["has_more"] is False
    body = client.get("/v1/orders", key=world.keys["a_one"], params={"page_size": 6}).json()
    assert len(body["data"]) == 6 and body["has_more"] is True


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("page", "0"),
        ("page", "-1"),
        ("page", "1.5"),
        ("page", "abc"),
        ("page", ""),
        ("page", "1000000001"),
        ("page_size", "0"),
        ("page_size", "251"),
        ("page_size", "1e2"),
        ("page_size", " 5"),
    ],
)
def test_paging_out_of_range_is_400_never_clamped(
    client: Client, world: World, name: str, value: str
) -> None:
    response = client.get("/v1/orders", key=world.keys["a_all"], params={name: value})
    body = assert_problem(response, 400, "Invalid request")
    assert field_errors(body) == [name] and name in body["detail"]


def test_page_size_maximum_is_accepted(client: Client, world: World) -> None:
    body = client.get("/v1/orders", key=world.keys["a_all"], params={"page_size": 250}).json()
    assert body["page_size"] == 250


def test_a_scalar_parameter_given_twice_is_400(client: Client, world: World) -> None:
    response = client.get("/v1/orders?page=1&page=2", key=world.keys["a_all"])
    assert field_errors(assert_problem(response, 400, "Invalid request")) == ["page"]


def test_fields_selects_exactly_and_in_order(client: Client, world: World) -> None:
    records = get_all(client, world.keys["a_one"], "orders", fields="total_price,id,created_at")
    assert [list(r) for r in records] == [["total_price", "id", "created_at"]] * 7
    expected = [
        render(r, "orders", ["total_price", "id", "created_at"])
        for r in world.records("orders", "st_a1")
    ]
    assert records == expected
    repeated = get_all(client, world.keys["a_one"], "orders", fields=["id", "id,email"])
    assert list(repeated[0]) == ["id", "email"]


@pytest.mark.parametrize(
    ("value", "named"),
    [("id,nope", "nope"), ("order_count", "order_count"), ("", ""), ("id,,email", "")],
)
def test_bad_fields_are_400_naming_the_field(
    client: Client, world: World, value: str, named: str
) -> None:
    for path in ("/v1/orders", "/v1/orders/ord_st_a1_01"):
        response = client.get(path, key=world.keys["a_all"], params={"fields": value})
        body = assert_problem(response, 400, "Invalid request")
        assert field_errors(body) == ["fields"]
        assert named in body["detail"]


def test_sales_has_no_record_endpoint(client: Client, world: World) -> None:
    for path in ("/v1/sales", "/v1/sales/anything"):
        assert_problem(client.get(path, key=world.keys["a_all"]), 404, "Not found")


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"created_at_min": "2024-01-02T00:00:00Z"}, [3, 4, 5, 6, 7]),
        ({"created_at_max": "2024-01-02T00:00:00Z"}, [1, 2]),
        ({"created_at_min": "2024-01-02", "created_at_max": "2024-02-01"}, [3, 4]),
        ({"created_at_min": "2024-01-02T01:00:00+01:00"}, [3, 4, 5, 6, 7]),
        ({"created_at_min": "2024-01-02T01:00:00 01:00"}, [3, 4, 5, 6, 7]),  # unencoded +
        ({"created_at_min": "2024-01-01T21:00:00-03:00"}, [3, 4, 5, 6, 7]),
        ({"created_at_min": "2024-01-02T00:00:00"}, [3, 4, 5, 6, 7]),  # no zone: UTC
        ({"created_at_max": "2024-01-15T12:30:45.123456Z"}, [1, 2, 3]),
        ({"created_at_min": "2024-01-15T12:30:45.123456Z"}, [4, 5, 6, 7]),
        ({"created_at_min": "2024-03-01", "created_at_max": "2024-01-01"}, []),
    ],
)
def test_created_at_bounds(
    client: Client, world: World, params: dict[str, str], expected: list[int]
) -> None:
    records = get_all(client, world.keys["a_one"], "orders", **params)
    assert ids(records) == [f"ord_st_a1_{n:02d}" for n in expected]


@pytest.mark.parametrize("name", ["created_at_min", "created_at_max"])
@pytest.mark.parametrize("value", ["yesterday", "2024-13-01", "2024-01-01T25:00:00Z", "", "1"])
def test_bad_time_bounds_are_400(client: Client, world: World, name: str, value: str) -> None:
    response = client.get("/v1/orders", key=world.keys["a_all"], params={name: value})
    assert field_errors(assert_problem(response, 400, "Invalid request")) == [name]


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"financial_status": "refunded"}, [3]),
        ({"financial_status": "refunded,pending"}, [3, 7]),  # comma: OR
        ({"financial_status": ["refunded", "pending"]}, [3, 7]),  # repeated: OR
        ({"financial_status": "paid", "line_item_count": "3"}, [6]),  # AND
        ({"fulfillment_status": "null"}, [5]),  # bare null: missing value
        ({"customer_name": '"null"'}, []),  # quoted: the string
        ({"financial_status": "authorized,voided"}, []),  # platform values, none present
        ({"customer_name": "null,Customer 1"}, [1, 6]),
        ({"tags": '"vip,b2b"'}, [5]),  # quoted comma
        ({"tags": "vip,b2b"}, []),  # two values, neither matches
        ({"total_price": "100"}, [2]),
        ({"total_price": "100.00,99999999.99"}, [2, 4]),
        ({"total_price": "12.3"}, [1, 3, 5, 6, 7]),
        ({"total_price": "12.301"}, []),
        ({"total_price": "1e30"}, []),
        ({"line_item_count": "3.0"}, [6]),
        ({"line_item_count": "1.5"}, []),
        ({"created_at": "2024-01-01"}, [1, 2]),  # a date: that whole UTC day
        ({"created_at": "2024-01-15T12:30:45.123456Z"}, [4]),
        ({"cancelled_at": "null", "id": "ord_st_a1_07"}, [7]),
        ({"order_name": "Robert'); DROP TABLE orders;--"}, []),
    ],
)
def test_equality_filters(
    client: Client, world: World, params: dict[str, Any], expected: list[int]
) -> None:
    records = get_all(client, world.keys["a_one"], "orders", **params)
    assert ids(records) == [f"ord_st_a1_{n:02d}" for n in expected]


@pytest.mark.parametrize(
    ("records", "name", "value"),
    [
        ("orders", "financial_status", "payed"),
        ("orders", "financial_status", "paid,partialy_refunded"),
        ("orders", "financial_status", "Refunded"),  # case-sensitive
        ("orders", "fulfillment_status", '"null"'),  # quoted: the string, not a status
        ("customers", "state", "active"),
        ("products", "status", "published"),
        ("draft_orders", "status", "sent"),
    ],
)
def test_values_outside_a_fields_enumeration_are_400_naming_the_allowed_ones(
    client: Client, world: World, records: str, name: str, value: str
) -> None:
    response = client.get(f"/v1/{records}", key=world.keys["a_all"], params={name: value})
    body = assert_problem(response, 400, "Invalid request")
    assert field_errors(body) == [name]
    (error,) = body["errors"]
    found = dataset(records)
    assert found is not None
    allowed = next(f for f in found.fields if f.name == name).values
    assert allowed and all(v in error["message"] for v in allowed), error


def test_the_financial_status_enumeration_is_the_platforms() -> None:
    orders = dataset("orders")
    assert orders is not None
    field = next(f for f in orders.fields if f.name == "financial_status")
    assert field.values == ("pending", "authorized", "partially_paid", "paid",
                            "partially_refunded", "refunded", "voided", "expired")  # fmt: skip


def test_boolean_and_number_filters_on_customers(client: Client, world: World) -> None:
    found = get_all(client, world.keys["a_one"], "customers", accepts_marketing="true")
    assert ids(found) == ["cus_st_a1_1"]
    found = get_all(client, world.keys["a_one"], "customers", accepts_marketing="FALSE")
    assert ids(found) == ["cus_st_a1_2"]
    found = get_all(client, world.keys["a_one"], "customers", total_spent="2469.00")
    assert ids(found) == ["cus_st_a1_2"]
    found = get_all(client, world.keys["a_one"], "customers", email="null")
    assert ids(found) == ["cus_st_a1_2"]


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("line_item_count", "three"),
        ("total_price", "NaN"),
        ("total_price", "$12.30"),
        ("created_at", "soon"),
        ("financial_status", '"unterminated'),
        ("financial_status", '"a"b'),
        ("financial_status", "a,,b"),
        ("financial_status", ""),
    ],
)
def test_values_that_do_not_fit_are_400_naming_the_parameter(
    client: Client, world: World, name: str, value: str
) -> None:
    response = client.get("/v1/orders", key=world.keys["a_all"], params={name: value})
    body = assert_problem(response, 400, "Invalid request")
    assert field_errors(body) == [name] and name in body["detail"]


def test_boolean_filter_rejects_other_words(client: Client, world: World) -> None:
    response = client.get(
        "/v1/customers", key=world.keys["a_all"], params={"accepts_marketing": "yes"}
    )
    assert field_errors(assert_problem(response, 400, "Invalid request")) == ["accepts_marketing"]


@pytest.mark.parametrize("name", ["nope", "order_count", "Financial_status", "limit", "sort"])
def test_unknown_parameters_are_400_never_ignored(client: Client, world: World, name: str) -> None:
    response = client.get("/v1/orders", key=world.keys["a_all"], params={name: "1"})
    body = assert_problem(response, 400, "Invalid request")
    assert field_errors(body) == [name] and name in body["detail"]
