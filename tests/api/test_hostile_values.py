"""Values that used to be read as something else are refused with a 400 naming the
parameter (issue 17, item 7): the server's own zone `localtime`, timestamps holding a NUL
(read up to it) and fractions finer than the microsecond (silently truncated)."""

from __future__ import annotations

import pytest

from tests.api.conftest import Client, assert_problem, field_errors
from tests.api.world import World


def test_the_servers_own_zone_is_not_a_time_zone(client: Client, world: World) -> None:
    body = {"query": "FROM sales SHOW total_sales", "time_zone": "localtime"}
    response = client.request("POST", "/v1/query", key=world.keys["a_all"], json=body)
    problem = assert_problem(response, 400, "Invalid request")
    assert field_errors(problem) == ["time_zone"]


def test_with_timezone_localtime_is_an_unknown_zone(client: Client, world: World) -> None:
    query = "FROM sales SHOW total_sales WITH TIMEZONE 'localtime'"
    response = client.request("POST", "/v1/query", key=world.keys["a_all"], json={"query": query})
    problem = assert_problem(response, 400, "Invalid query")
    assert problem["errors"][0]["message"].startswith("Unknown time zone 'localtime'")
    assert (problem["errors"][0]["line"], problem["errors"][0]["column"]) == (1, 43)


@pytest.mark.parametrize(
    ("parameter", "value"),
    [
        ("created_at_min", "2024-01-01T00:00:00\x00"),
        ("created_at_max", "2024-01-01T00:00:00Z\x00junk"),
        ("created_at_min", "2024-01-01T00:00:00.123456789Z"),
        ("created_at_max", "2024-01-01T00:00:00,1234567"),
        ("created_at_min", "2024-01-01 00:00:00.0000001+00:00"),
        ("created_at", "2024-01-01T10:00:00.0000000"),  # a filter on a timestamp field
        ("updated_at", '"2024-01-01T10:00:00\x00",null'),
    ],
)
def test_lossy_timestamps_are_refused_naming_the_parameter(
    client: Client, world: World, parameter: str, value: str
) -> None:
    response = client.get("/v1/orders", key=world.keys["a_all"], params={parameter: value})
    problem = assert_problem(response, 400, "Invalid request")
    assert field_errors(problem) == [parameter]


@pytest.mark.parametrize(
    "value",
    ["2024-01-01T00:00:00.123456Z", "2024-01-01T00:00:00,5", "2024-01-01", "2024-01-01T10:00"],
)
def test_timestamps_to_the_microsecond_are_read(client: Client, world: World, value: str) -> None:
    response = client.get("/v1/orders", key=world.keys["a_all"], params={"created_at_min": value})
    assert response.status_code == 200, response.text
