"""The OpenAPI document says what the server refuses (issue 17, item 5): every empty value
the server answers with a 400 naming the parameter is also invalid by the document, so a
client generated from it, or a fuzzer, never sends what it was told is valid and gets a
400. The refusals themselves stay as they were."""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft202012Validator, FormatChecker

from tests.api.conftest import Client, assert_problem, field_errors
from tests.api.world import World


def _valid(schema: dict[str, Any], value: object) -> bool:
    return Draft202012Validator(schema, format_checker=FormatChecker()).is_valid(value)


@pytest.fixture(scope="module")
def document(client: Client) -> dict[str, Any]:
    response = client.get("/openapi.json")
    assert response.status_code == 200
    result: dict[str, Any] = response.json()
    return result


def _list_operations(document: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [
        (path, item["get"])
        for path, item in document["paths"].items()
        if path.startswith("/v1/") and "{" not in path and "get" in item
    ]


def test_every_empty_query_parameter_refused_is_invalid_by_the_schema(
    client: Client, world: World, document: dict[str, Any]
) -> None:
    checked = 0
    for path, operation in _list_operations(document):
        for parameter in operation.get("parameters", []):
            if parameter["in"] != "query":
                continue
            name, schema = parameter["name"], parameter["schema"]
            response = client.get(f"{path}?{name}=", key=world.keys["a_all"])
            if response.status_code == 200:
                continue
            problem = assert_problem(response, 400, "Invalid request")
            assert field_errors(problem) == [name], (path, name, problem)
            # `name=` is the list [""] for an array, "" otherwise.
            value: object = [""] if schema.get("type") == "array" else ""
            assert not _valid(schema, value), (path, name, schema)
            checked += 1
    # id=, store_ids= and every other filter of every record list.
    assert checked > 50


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"query": "FROM sales SHOW total_sales", "time_zone": ""}, "time_zone"),
        ({"query": "FROM sales SHOW total_sales", "store_ids": [""]}, "store_ids"),
    ],
)
def test_empty_body_values_refused_are_invalid_by_the_schema(
    client: Client, world: World, document: dict[str, Any], body: dict[str, Any], field: str
) -> None:
    response = client.request("POST", "/v1/query", key=world.keys["a_all"], json=body)
    problem = assert_problem(response, 400, "Invalid request")
    assert field_errors(problem) == [field]
    request_body = document["paths"]["/v1/query"]["post"]["requestBody"]
    schema = request_body["content"]["application/json"]["schema"]
    assert _valid(schema, {"query": "FROM sales SHOW total_sales"})
    assert not _valid(schema, body)


def test_the_empty_query_is_invalid_by_the_schema(
    client: Client, world: World, document: dict[str, Any]
) -> None:
    response = client.request("POST", "/v1/query", key=world.keys["a_all"], json={"query": ""})
    assert_problem(response, 400, "Invalid query")
    request_body = document["paths"]["/v1/query"]["post"]["requestBody"]
    assert not _valid(request_body["content"]["application/json"]["schema"], {"query": ""})


def test_an_empty_idempotency_key_is_invalid_by_the_schema(
    client: Client, world: World, document: dict[str, Any]
) -> None:
    response = client.request(
        "POST",
        "/v1/exports/cfg_unknown/run",
        key=world.keys["a_all"],
        headers={"Idempotency-Key": ""},
    )
    problem = assert_problem(response, 400, "Invalid request")
    assert field_errors(problem) == ["Idempotency-Key"]
    operation = document["paths"]["/v1/exports/{config_id}/run"]["post"]
    [header] = [p for p in operation["parameters"] if p["name"] == "Idempotency-Key"]
    assert not _valid(header["schema"], "")
    assert not _valid(header["schema"], "x" * 256)
    assert _valid(header["schema"], "retry-2024-05-01")


# (path, parameter, value): what a filter of each type may hold, and what it may not.
FILTER_VALUES = (
    [
        ("/v1/customers", "accepts_marketing", v)
        for v in ("true", "FALSE", "null", '"true"', "true,false", "0", "yes", "", "true,")
    ]
    + [
        ("/v1/orders", "total_price", v)
        for v in (
            "12.30",
            "-1e2",
            ".5",
            "5.",
            '"7"',
            "1,2,null",
            "0",
            " 1",
            "1_000",
            "NaN",
            "1e",
            "x",
        )
    ]
    + [("/v1/orders", "line_item_count", v) for v in ("3", "3.5", "+3", "1e1234567890", "3 ")]
    + [
        ("/v1/orders", "financial_status", v)
        for v in ("paid", '"a,b"', 'say "hi"', '"unclosed', '"a"b', "a,,b", ",", '""', "null")
    ]
    + [
        ("/v1/export-jobs", name, v)
        for name in ("page", "page_size")
        for v in ("0", "1", "50", "250", "251", "1000000", "1000001", "-1", "1.0", "x")
    ]
)


@pytest.mark.parametrize(("path", "name", "value"), FILTER_VALUES)
def test_the_schema_and_the_server_agree_on_a_value(
    client: Client, world: World, document: dict[str, Any], path: str, name: str, value: str
) -> None:
    """Both directions (issue 32): a value the schema allows is not refused, and a value
    the server refuses is not allowed by the schema. Schemathesis explores this at random
    (test_schemathesis.py); these are the cases it found and their neighbours."""
    [parameter] = [p for p in document["paths"][path]["get"]["parameters"] if p["name"] == name]
    schema = parameter["schema"]
    wire: object = value
    if schema.get("type") == "array":
        wire = [value]
    elif schema.get("type") == "integer":
        wire = int(value) if value.lstrip("-").isdigit() else value
    allowed = _valid(schema, wire)
    response = client.get(path, key=world.keys["a_all"], params={name: value})
    assert response.status_code in (200, 400), response.text
    assert allowed == (response.status_code == 200), (value, allowed, response.text)
