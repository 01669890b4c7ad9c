"""POST /v1/query through HTTP, on an account of its own in the API test world.

Account "Query" (USD, America/New_York) has three stores in three currencies; its sales
are written with the warehouse writer and rates with upsert_rows, like a sync. The figures
below are worked out by hand:

| order | store        | at (UTC)         | total                   | rate (units per USD) |
|-------|--------------|------------------|-------------------------|----------------------|
| o1    | Main Street  | 2024-03-05 15:00 | 100.10 USD              |                      |
| o2    | Main Street  | 2024-03-06 15:00 | 0.20 USD                |                      |
| o3    | Berlin Shop  | 2024-03-05 10:00 | 50.00 EUR               | 0.92 on 03-05        |
| o4    | hostile name | 2024-03-06 03:00 | 1000 JPY                | 150 on 03-04 only    |
| o5    | Main Street  | 2024-03-20 15:00 | 9007199254740993.01 USD | (above 2^53)         |

Factors to USD are 1/rate kept to 12 places (1.086956521739 and 0.006666666667, o4 taking
the latest rate before its Tokyo date 03-06); converted amounts are summed exactly and
rounded once: o3 is 54.34782608695, o4 6.666666667, so 2024-03-05..06 in New York is
100.10 + 0.20 + 54.34782608695 + 6.666666667 = 161.31449275395 -> 161.31, while the rows
by store round to 100.30 + 54.35 + 6.67 = 161.32.
"""

from __future__ import annotations

import csv
import io
import threading
from collections.abc import Iterator
from datetime import date
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

import duckdb
import httpx
import pyarrow as pa
import pytest
from anyio.from_thread import BlockingPortal

from api.deps import query_limits
from api.routes import query as query_route
from tests.api.conftest import Client, assert_problem, field_errors
from tests.api.expect import decode
from tests.api.query_world import (
    QueryAccount,
    StoreSpec,
    add_account,
    sale,
    write_rates,
    write_sales,
)
from tests.api.world import World
from warehouse.query import Limits
from warehouse.schemas import SALES

HOSTILE_STORE = '=HYPERLINK("http://x","y")'
HOSTILE_PRODUCT = "=cmd|' /C calc'!A0"
MARCH_5_6 = "SINCE 2024-03-05 UNTIL 2024-03-06"
BIG = "9007199254740993.01"


@pytest.fixture(scope="module")
def q(world: World) -> QueryAccount:
    account = add_account(
        world,
        "Query",
        "USD",
        "America/New_York",
        {
            "st_q_us": StoreSpec("Main Street", "USD", "America/New_York"),
            "st_q_eu": StoreSpec("Berlin Shop", "EUR", "Europe/Berlin"),
            "st_q_jp": StoreSpec(HOSTILE_STORE, "JPY", "Asia/Tokyo"),
        },
        {
            "all": (["read_data"], None),
            "us": (["read_data"], ["st_q_us"]),
            "exports": (["exports"], None),
        },
    )
    write_rates(world, [(date(2024, 3, 5), "EUR", "0.92"), (date(2024, 3, 4), "JPY", "150")])
    us = [
        sale(account, "st_q_us", "o1", "2024-03-05T15:00:00Z", "100.10"),
        sale(account, "st_q_us", "o2", "2024-03-06T15:00:00Z", "0.20", product_title="Tee"),
        sale(account, "st_q_us", "o5", "2024-03-20T15:00:00Z", BIG, product_title="Tee"),
    ]
    write_sales(world, "st_q_us", us)
    write_sales(world, "st_q_eu", [sale(account, "st_q_eu", "o3", "2024-03-05T10:00:00Z", "50")])
    jp = [
        sale(
            account, "st_q_jp", "o4", "2024-03-06T03:00:00Z", "1000", product_title=HOSTILE_PRODUCT
        )
    ]
    write_sales(world, "st_q_jp", jp)
    return account


def post(
    client: Client, key: str | None, body: Any, accept: str | None = None, **kwargs: Any
) -> httpx.Response:
    headers = {"Accept": accept} if accept else {}
    return client.request("POST", "/v1/query", key=key, json=body, headers=headers, **kwargs)


def answer(client: Client, key: str, query: str, **body: Any) -> dict[str, Any]:
    response = post(client, key, {"query": query, **body})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    return decode(response.text)


# ---- answers ----


def test_total_sales_is_exact_across_currencies(client: Client, q: QueryAccount) -> None:
    response = post(client, q.keys["all"], {"query": f"FROM sales SHOW total_sales {MARCH_5_6}"})
    assert response.status_code == 200, response.text
    assert response.headers["cache-control"] == "no-store"
    body = decode(response.text)
    assert body == {
        "columns": [
            {"name": "total_sales", "title": "Total sales", "type": "money", "role": "metric"}
        ],
        "rows": [{"total_sales": Decimal("161.31")}],
        "currency": "USD",
        "time_zone": "America/New_York",
        "window": {"gte": "2024-03-05T05:00:00Z", "lt": "2024-03-07T05:00:00Z"},
    }
    assert '"rows":[{"total_sales":161.31}]' in response.text  # a number, cents kept


def test_the_source_that_answered_is_a_header(
    client: Client, make_client: Any, q: QueryAccount
) -> None:
    """A monthly total over every store in New York: the hour rollup answers it, exactly as
    the facts do (QUARRY_ROLLUPS=off); a distinct count only the facts can answer."""
    query = "FROM sales SHOW total_sales, orders TIMESERIES month SINCE 2024-03-01 UNTIL 2024-03-31"
    rolled = post(client, q.keys["all"], {"query": query})
    assert rolled.status_code == 200, rolled.text
    assert rolled.headers["x-quarry-source"] == "rollup"
    off = post(make_client(rollups=False), q.keys["all"], {"query": query})
    assert off.headers["x-quarry-source"] == "facts"
    assert decode(off.text) == decode(rolled.text)
    customers = post(client, q.keys["all"], {"query": "FROM sales SHOW customers SINCE 2024-03-01"})
    assert customers.status_code == 200, customers.text
    assert customers.headers["x-quarry-source"] == "facts"


@pytest.mark.parametrize("condition", ["= 'a\x00b'", "IN ('Tee', 'a\x00b')", "!= 'a\x00b'"])
def test_text_with_a_nul_byte_is_compared_like_any_other(
    client: Client, q: QueryAccount, condition: str
) -> None:
    # DuckLake 1.5.5 failed such a constant in its file pruning (a 500).
    query = f"FROM sales SHOW total_sales WHERE product_title {condition} {MARCH_5_6}"
    body = answer(client, q.keys["all"], query)
    tee_or_other = {"= 'a\x00b'": Decimal("0.00"), "IN ('Tee', 'a\x00b')": Decimal("0.20")}
    if condition in tee_or_other:
        assert body["rows"] == [{"total_sales": tee_or_other[condition]}]
    else:
        assert body["rows"] == [{"total_sales": Decimal("161.31")}]


def test_money_beyond_float_precision_keeps_every_digit(client: Client, q: QueryAccount) -> None:
    response = post(
        client, q.keys["all"], {"query": "FROM sales SHOW total_sales DURING 2024-03-20"}
    )
    assert response.status_code == 200, response.text
    assert f'"total_sales":{BIG}' in response.text


def test_totals_only_when_asked_and_computed_not_summed(client: Client, q: QueryAccount) -> None:
    query = f"FROM sales SHOW total_sales GROUP BY store {MARCH_5_6}"
    plain = answer(client, q.keys["all"], query)
    assert "totals" not in plain and "truncated" not in plain
    body = answer(client, q.keys["all"], query + " WITH TOTALS")
    assert body["rows"] == [
        {"store": "Main Street", "total_sales": Decimal("100.30")},
        {"store": "Berlin Shop", "total_sales": Decimal("54.35")},
        {"store": HOSTILE_STORE, "total_sales": Decimal("6.67")},
    ]
    # The engine's figure over the window, not the sum of the rounded rows (161.32).
    assert body["totals"] == {"total_sales": Decimal("161.31")}


def test_time_zone_defaults_to_the_account_and_is_echoed(client: Client, q: QueryAccount) -> None:
    query = f"FROM sales SHOW total_sales {MARCH_5_6}"
    tokyo = answer(client, q.keys["all"], query, time_zone="Asia/Tokyo")
    # Tokyo's 03-05..06 ends at 2024-03-06T15:00Z, so o2 (at exactly that instant) is out.
    assert tokyo["time_zone"] == "Asia/Tokyo"
    assert tokyo["window"] == {"gte": "2024-03-04T15:00:00Z", "lt": "2024-03-06T15:00:00Z"}
    assert tokyo["rows"] == [{"total_sales": Decimal("161.11")}]
    # WITH TIMEZONE in the query wins over the body's zone.
    berlin = answer(
        client, q.keys["all"], query + " WITH TIMEZONE 'Europe/Berlin'", time_zone="Asia/Tokyo"
    )
    assert berlin["time_zone"] == "Europe/Berlin"
    assert berlin["window"] == {"gte": "2024-03-04T23:00:00Z", "lt": "2024-03-06T23:00:00Z"}


def test_store_ids_narrow_within_the_key(client: Client, q: QueryAccount) -> None:
    query = f"FROM sales SHOW total_sales {MARCH_5_6}"
    body = answer(client, q.keys["all"], query, store_ids=["st_q_us"])
    assert body["rows"] == [{"total_sales": Decimal("100.30")}]
    body = answer(client, q.keys["all"], query, store_ids=["st_q_eu", "st_q_jp", "st_q_eu"])
    assert body["rows"] == [{"total_sales": Decimal("61.01")}]
    # A key limited to one store reads only it.
    assert answer(client, q.keys["us"], query)["rows"] == [{"total_sales": Decimal("100.30")}]


@pytest.mark.parametrize("store_id", ["st_q_eu", "st_a1", "st_nowhere"])
def test_store_ids_out_of_scope_or_unknown_are_the_same_400(
    client: Client, q: QueryAccount, store_id: str
) -> None:
    """Another store of the account (outside the key), another account's store and a
    store that does not exist: one answer, naming store_ids, as on the record endpoints."""
    response = post(
        client, q.keys["us"], {"query": "FROM sales SHOW total_sales", "store_ids": [store_id]}
    )
    body = assert_problem(response, 400, "Invalid request")
    assert body["errors"] == [
        {"field": "store_ids", "message": f"{store_id!r} is not a store this key can read"}
    ]
    records = client.get("/v1/orders", key=q.keys["us"], params={"store_ids": store_id})
    assert decode(records.text)["errors"] == body["errors"]


def test_store_in_by_name(client: Client, q: QueryAccount) -> None:
    query = f"FROM sales SHOW total_sales WHERE store IN ('Main Street', 'berlin shop') {MARCH_5_6}"
    body = answer(client, q.keys["all"], query)
    assert body["rows"] == [{"total_sales": Decimal("154.65")}]  # 100.30 + 54.34782608695
    # The body's store_ids and WHERE store intersect.
    body = answer(client, q.keys["all"], query, store_ids=["st_q_eu", "st_q_jp"])
    assert body["rows"] == [{"total_sales": Decimal("54.35")}]


def test_an_unreadable_store_name_is_an_unknown_one(client: Client, q: QueryAccount) -> None:
    def diagnostics(key: str, name: str) -> list[dict[str, Any]]:
        response = post(
            client, key, {"query": f"FROM sales SHOW total_sales WHERE store = '{name}'"}
        )
        return assert_problem(response, 400, "Invalid query")["errors"]

    unknown = diagnostics(q.keys["us"], "Berlin Shoq")
    # The account's store outside the key, and another account's store.
    for name in ("Berlin Shop", "Europa"):
        assert diagnostics(q.keys["us"], name) == [
            {**unknown[0], "message": unknown[0]["message"].replace("Berlin Shoq", name)}
        ]
    assert unknown[0]["message"] == "Unknown store 'Berlin Shoq'."  # no hint at hidden names
    # With the key that reads it, the same typo gets a hint.
    hinted = diagnostics(q.keys["all"], "Berlin Shoq")
    assert hinted[0]["message"] == "Unknown store 'Berlin Shoq'. Did you mean 'Berlin Shop'?"


def test_default_limit_cuts_and_says_truncated(client: Client, q: QueryAccount) -> None:
    query = "FROM sales SHOW total_sales TIMESERIES hour SINCE 2024-03-01 UNTIL 2024-04-30"
    body = answer(client, q.keys["all"], query)
    assert len(body["rows"]) == 1000 and body["truncated"] is True
    assert "truncated" not in answer(client, q.keys["all"], query + " LIMIT 1000")


# ---- CSV ----


def test_csv_is_the_same_table_with_titles(client: Client, q: QueryAccount) -> None:
    query = (
        f"FROM sales SHOW total_sales, orders GROUP BY store, product_title {MARCH_5_6} WITH TOTALS"
    )
    data = answer(client, q.keys["all"], query)
    response = post(client, q.keys["all"], {"query": query}, accept="text/csv")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "text/csv; charset=utf-8"
    assert response.headers["cache-control"] == "no-store"
    assert response.text.endswith("\r\n")
    header, *rows = list(csv.reader(io.StringIO(response.text, newline="")))
    assert header == [c["title"] for c in data["columns"]]
    assert header == ["Store", "Product title", "Total sales", "Orders"]
    assert len(rows) == len(data["rows"])  # no totals row
    neutral = {HOSTILE_STORE: "'" + HOSTILE_STORE, HOSTILE_PRODUCT: "'" + HOSTILE_PRODUCT}
    expected = [
        [neutral.get(v, v) if isinstance(v, str) else str(v) for v in row.values()]
        for row in data["rows"]
    ]
    assert rows == expected
    assert ["'" + HOSTILE_STORE, "'" + HOSTILE_PRODUCT, "6.67", "1"] in rows


@pytest.mark.parametrize(
    ("accept", "media_type"),
    [
        ("text/csv", "text/csv"),
        ("text/*", "text/csv"),
        ("text/csv, */*;q=0.8", "text/csv"),
        ("application/json;q=0.5, text/csv", "text/csv"),
        ("*/*", "application/json"),
        ("text/csv;q=0.5, application/json", "application/json"),
        ("text/csv, application/json", "application/json"),
        ("application/xml, */*;q=0.1", "application/json"),
    ],
)
def test_accept_picks_json_or_csv(
    client: Client, q: QueryAccount, accept: str, media_type: str
) -> None:
    response = post(client, q.keys["all"], {"query": "FROM sales SHOW total_sales"}, accept=accept)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].split(";")[0] == media_type
    assert response.headers["vary"] == "Accept"


@pytest.mark.parametrize("accept", ["application/xml", "text/csv;q=0, application/json;q=0"])
def test_accept_it_cannot_answer_is_406(client: Client, q: QueryAccount, accept: str) -> None:
    response = post(client, q.keys["all"], {"query": "FROM sales SHOW total_sales"}, accept=accept)
    body = assert_problem(response, 406, "Not acceptable")
    assert "application/json or text/csv" in body["detail"]


# ---- errors ----


def test_every_diagnostic_in_one_400(client: Client, q: QueryAccount) -> None:
    query = "FROM sales\nSHOW total_sale\nWHERE store = 'Nowhere' SINCE yesteday"
    response = post(client, q.keys["all"], {"query": query}, accept="text/csv")
    body = assert_problem(response, 400, "Invalid query")
    assert body["errors"] == [
        {
            "line": 2,
            "column": 6,
            "message": "Unknown field 'total_sale' in sales. Did you mean 'total_sales'?",
            "severity": "error",
        },
        {"line": 3, "column": 15, "message": "Unknown store 'Nowhere'.", "severity": "error"},
        {
            "line": 3,
            "column": 31,
            "message": "Unknown date range 'yesteday'. Did you mean 'yesterday'?",
            "severity": "error",
        },
    ]


@pytest.mark.parametrize("query", ["", "   \n\t", "-- nothing here\n/* at all */"])
def test_empty_query_is_an_invalid_query(client: Client, q: QueryAccount, query: str) -> None:
    body = assert_problem(post(client, q.keys["all"], {"query": query}), 400, "Invalid query")
    assert body["errors"] == [
        {"line": 1, "column": 1, "message": "The query is empty.", "severity": "error"}
    ]


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({}, ["query"]),
        ({"query": None}, ["query"]),
        ({"query": 5}, ["query"]),
        ({"query": ["FROM sales"]}, ["query"]),
        ({"query": "FROM sales SHOW total_sales", "store_ids": "st_q_us"}, ["store_ids"]),
        ({"query": "FROM sales SHOW total_sales", "store_ids": [1]}, ["store_ids.0"]),
        ({"query": "FROM sales SHOW total_sales", "store_ids": []}, ["store_ids"]),
        ({"query": "FROM sales SHOW total_sales", "time_zone": "Mars/Olympus"}, ["time_zone"]),
        ({"query": "FROM sales SHOW total_sales", "time_zone": 1}, ["time_zone"]),
        ({"query": "FROM sales SHOW total_sales", "limit": 5}, ["limit"]),
        ({"query": "x" * 100_001}, ["query"]),
        (
            {"query": 1, "time_zone": "Nowhere/At_All", "extra": True},
            ["query", "time_zone", "extra"],
        ),
        ([], ["body"]),
        ("FROM sales SHOW total_sales", ["body"]),
    ],
)
def test_malformed_body_names_each_field(
    client: Client, q: QueryAccount, body: Any, fields: list[str]
) -> None:
    problem = assert_problem(post(client, q.keys["all"], body), 400, "Invalid request")
    assert field_errors(problem) == fields


@pytest.mark.parametrize(
    ("content", "content_type"),
    [
        (b"", "application/json"),
        (b"{", "application/json"),
        (b'{"query": "FROM sales SHOW total_sales"}', "text/plain"),
        (b"query=FROM+sales", "application/x-www-form-urlencoded"),
    ],
)
def test_body_that_is_not_json_is_400(
    client: Client, q: QueryAccount, content: bytes, content_type: str
) -> None:
    response = client.request(
        "POST",
        "/v1/query",
        key=q.keys["all"],
        content=content,
        headers={"Content-Type": content_type},
    )
    assert field_errors(assert_problem(response, 400, "Invalid request")) == ["body"]


def test_query_parameters_are_refused(client: Client, q: QueryAccount) -> None:
    response = post(
        client,
        q.keys["all"],
        {"query": "FROM sales SHOW total_sales"},
        params={"store_ids": "st_q_us"},
    )
    assert field_errors(assert_problem(response, 400, "Invalid request")) == ["store_ids"]


def test_key_checks_come_before_the_body(client: Client, world: World, q: QueryAccount) -> None:
    broken = {"content": b"{", "headers": {"Content-Type": "application/json"}}
    assert_problem(client.request("POST", "/v1/query", **broken), 401, "Unauthorized")
    revoked = client.request("POST", "/v1/query", key=world.keys["a_revoked"], **broken)
    assert_problem(revoked, 401, "Unauthorized")
    query = {"query": "FROM sales SHOW total_sales"}
    assert_problem(post(client, q.keys["exports"], query), 403, "Insufficient scope")
    assert_problem(post(client, world.keys["c_all"], query), 403, "Plan upgrade required")
    assert_problem(post(client, q.keys["exports"], {}), 403, "Insufficient scope")


# Each clause follows "FROM sales SHOW total_sales " (28 characters), so the operand's
# column is 29 + the length of what precedes it in the clause.
@pytest.mark.parametrize(
    ("clause", "column", "message"),
    [
        ("SINCE 2024-02-30", 35, "2024-02-30 is not a date: February 2024 has 29 days."),
        ("SINCE 2024-13-01", 35, "2024-13-01 is not a date: months run from 01 to 12."),
        (
            "SINCE 2024-01-31T25:00:00",
            35,
            "2024-01-31T25:00:00 is not a timestamp: hours run from 00 to 23.",
        ),
        (
            "SINCE -999999999d",
            35,
            "offset -999999999d is out of range (dates run from 0002 to 9998).",
        ),
        (
            "SINCE startOfMonth(-99999m)",
            35,
            "startOfMonth(-99999m) is out of range (dates run from 0002 to 9998).",
        ),
        ("UNTIL 2023-02-29", 35, "2023-02-29 is not a date: February 2023 has 28 days."),
        ("DURING 9999-12-31", 36, "9999-12-31 is out of range (dates run from 0002 to 9998)."),
        (
            "COMPARE TO 2024-01-01 UNTIL 2024-04-31",
            57,
            "2024-04-31 is not a date: April 2024 has 30 days.",
        ),
        (
            "WHERE order_date = 2024-06-31",
            48,
            "2024-06-31 is not a date: June 2024 has 30 days.",
        ),
    ],
)
def test_impossible_dates_are_invalid_queries(
    client: Client, q: QueryAccount, clause: str, column: int, message: str
) -> None:
    response = post(client, q.keys["all"], {"query": f"FROM sales SHOW total_sales {clause}"})
    body = assert_problem(response, 400, "Invalid query")
    assert body["errors"] == [
        {"line": 1, "column": column, "message": message, "severity": "error"}
    ]


def test_date_errors_come_with_the_other_errors(client: Client, q: QueryAccount) -> None:
    query = "FROM sales SHOW total_sale SINCE 2024-02-30 UNTIL -9999999999y"
    body = assert_problem(post(client, q.keys["all"], {"query": query}), 400, "Invalid query")
    assert [(e["column"], e["message"].split(" ")[0]) for e in body["errors"]] == [
        (17, "Unknown"),
        (34, "2024-02-30"),
        (51, "offset"),
    ]


def test_missing_exchange_rate_is_a_problem(client: Client, q: QueryAccount) -> None:
    query = f"FROM sales SHOW total_sales {MARCH_5_6} WITH CURRENCY 'GBP'"
    body = assert_problem(
        post(client, q.keys["all"], {"query": query}), 500, "Missing exchange rate"
    )
    # The client learns which currency lacks rates (Quarry's own text, no path or host).
    assert body["detail"].startswith("No exchange rate to GBP on or before"), body


# The whole calendar fits only in UTC: in New York the end of 9998-12-31 is in 9999.
WHOLE_CALENDAR = "SINCE 0002-01-01 UNTIL 9998-12-31"


def test_hourly_series_over_the_whole_calendar_is_too_large(
    client: Client, q: QueryAccount
) -> None:
    query = f"FROM sales SHOW total_sales TIMESERIES hour {WHOLE_CALENDAR}"
    response = post(client, q.keys["all"], {"query": query, "time_zone": "UTC"})
    body = assert_problem(response, 400, "Invalid query")
    # The 87,631,896 hours of 0002-01-01 .. 9999-01-01 are counted, never listed.
    assert body["errors"] == [
        {
            "line": 1,
            "column": query.index("TIMESERIES") + 1,
            "message": "The result would have about 87,631,896 rows, more than the 100,000 a "
            "query may return: narrow the window, filter with WHERE, use TOP n, or export the "
            "records instead.",
            "severity": "error",
        }
    ]


def test_conversion_over_the_whole_calendar(client: Client, q: QueryAccount) -> None:
    query = f"FROM sales SHOW total_sales {WHOLE_CALENDAR} WITH CURRENCY 'EUR'"
    got = answer(client, q.keys["all"], query, time_zone="UTC")
    # To EUR at 0.92 per USD (03-05 is the only EUR rate; later days take it too), JPY at
    # 150 per USD: 100.10 + 0.20 + BIG USD, 50 EUR and 1000 JPY, summed exactly.
    usd = Decimal("100.10") + Decimal("0.20") + Decimal(BIG)
    factor = (Decimal("0.92") / Decimal(150)).quantize(Decimal("1e-12"))
    total = usd * Decimal("0.92") + Decimal(50) + Decimal(1000) * factor
    assert got["currency"] == "EUR"
    assert got["window"] == {"gte": "0002-01-01T00:00:00Z", "lt": "9999-01-01T00:00:00Z"}
    rounded = total.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
    assert Decimal(str(got["rows"][0]["total_sales"])) == rounded


def test_rate_limit_headers_and_charge(make_client: Any, q: QueryAccount) -> None:
    limited = make_client(rate_limit="2/3600")
    query = {"query": "FROM sales SHOW total_sales"}
    first = post(limited, q.keys["all"], query)
    assert first.status_code == 200
    assert first.headers["x-ratelimit-limit"] == "2"
    assert first.headers["x-ratelimit-remaining"] == "1"
    # A broken body still costs the key its request.
    assert post(limited, q.keys["all"], {}).status_code == 400
    refused = post(limited, q.keys["all"], query)
    assert_problem(refused, 429, "Too many requests")
    assert refused.headers["retry-after"]


def test_openapi_documents_the_endpoint(client: Client) -> None:
    operation = client.get("/openapi.json").json()["paths"]["/v1/query"]["post"]
    body = operation["requestBody"]["content"]["application/json"]["schema"]
    assert body["required"] == ["query"] and body["additionalProperties"] is False
    assert set(body["properties"]) == {"query", "store_ids", "time_zone"}
    responses = operation["responses"]
    assert set(responses["200"]["content"]) == {"application/json", "text/csv"}
    for status in ("400", "401", "403", "406", "429", "504"):
        assert set(responses[status]["content"]) == {"application/problem+json"}, status


# ---- time limit and the event loop ----


@pytest.fixture(scope="module")
def slow(world: World) -> Iterator[QueryAccount]:
    """An account whose one store has 500,000 sales: enough for DuckDB to take a second
    over distinct counts and medians, written in about one."""
    account = add_account(
        world,
        "Slow",
        "USD",
        "UTC",
        {"st_q_slow": StoreSpec("Big", "USD", "UTC")},
        {"all": (["read_data"], None)},
    )
    generated = duckdb.sql(
        "SELECT 'e' || i AS id, 'st_q_slow' AS store_id, 'o' || i AS order_id, "
        "'order' AS event_type, TIMESTAMPTZ '2024-03-05 12:00:00+00' AS happened_at, "
        "TIMESTAMP '2024-03-05 12:00:00' AS happened_at_store, "
        "TIMESTAMP '2024-03-05 12:00:00' AS happened_at_account, 'USD' AS currency, "
        "'c' || i AS customer_id, 'product ' || (i % 5000) AS product_title, "
        "(i % 997)::DECIMAL(18, 2) AS total_sales FROM range(500000) t(i)"
    ).to_arrow_table()
    size = generated.num_rows
    columns = {
        f.name: generated[f.name] if f.name in generated.column_names else pa.nulls(size, f.type)
        for f in SALES.schema
    }
    write_sales(world, "st_q_slow", pa.table(columns).cast(SALES.schema), full=True)
    yield account


SLOW_QUERY = (
    "FROM sales SHOW customers, orders, median(total_sales), count_distinct(product_title) "
    "SINCE 2024-03-01 UNTIL 2024-03-31 COMPARE TO 2024-03-01 UNTIL 2024-03-31 WITH TOTALS"
)


def test_timeout_is_504_and_the_app_keeps_answering(make_client: Any, slow: QueryAccount) -> None:
    fast = make_client()

    async def tiny() -> Limits:
        return Limits(timeout_seconds=0.05)

    fast.app.dependency_overrides[query_limits] = tiny
    response = post(fast, slow.keys["all"], {"query": SLOW_QUERY})
    body = assert_problem(response, 504, "Query timed out")
    assert "errors" not in body
    # Unlike other server errors, the detail is the query's own: it holds no secrets.
    assert body["detail"] == "The query timed out: it ran past the 0.05 s time limit."
    # The interrupted cursor is closed with its request: the next query runs.
    fast.app.dependency_overrides.clear()
    small = post(fast, slow.keys["all"], {"query": "FROM sales SHOW total_sales DURING 2024-03-04"})
    assert small.status_code == 200, small.text


def test_limits_come_from_settings(make_client: Any, slow: QueryAccount) -> None:
    impatient = make_client(query_timeout_seconds=0.05)
    body = assert_problem(
        post(impatient, slow.keys["all"], {"query": SLOW_QUERY}), 504, "Query timed out"
    )
    assert "0.05 s" in body["detail"]
    narrow = make_client(query_max_groups=2)
    query = "FROM sales SHOW total_sales TIMESERIES day SINCE 2024-03-04 UNTIL 2024-03-06"
    body = assert_problem(post(narrow, slow.keys["all"], {"query": query}), 400, "Invalid query")
    assert body["errors"][0]["message"].startswith("The result would have about")


def test_a_running_query_leaves_the_event_loop_free(
    client: Client, portal: BlockingPortal, q: QueryAccount, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The query is held inside its worker thread until health has answered: were the
    query run on the event loop, health could not answer while it is held."""
    entered, release, gave_up = threading.Event(), threading.Event(), threading.Event()
    real = query_route.query_result

    def held(*args: Any) -> Any:
        entered.set()
        if not release.wait(timeout=10):
            gave_up.set()
        return real(*args)

    monkeypatch.setattr(query_route, "query_result", held)

    async def post() -> int:
        response = await client._client.post(
            "/v1/query",
            json={"query": "FROM sales SHOW total_sales SINCE 2024-03-01 UNTIL 2024-03-31"},
            headers={"Authorization": f"Bearer {q.keys['us']}"},
        )
        return response.status_code

    running = portal.start_task_soon(post)
    assert entered.wait(timeout=20), "the query never started"
    try:
        assert client.get("/healthz").status_code == 200
        assert not gave_up.is_set(), "health answered only after the held query gave up"
    finally:
        release.set()
    assert running.result(timeout=60) == 200


def test_issue_19_forms_read_the_lake(client: Client, q: QueryAccount) -> None:
    """customer_type's lookup of first orders, GROUPING SETS and the new sales columns work
    on the warehouse's DuckLake views, not only on plain tables."""
    body = answer(
        client,
        q.keys["us"],
        "FROM sales SHOW total_sales, customers, cost_of_goods_sold GROUP BY store, "
        "customer_type SINCE 2024-03-01 UNTIL 2024-03-31 WITH TOTALS, GROUP_TOTALS",
    )
    # Each of the three orders is its own customer's first.
    assert body["rows"] == [
        {
            "store": "Main Street",
            "customer_type": "First-time",
            "total_sales": Decimal(BIG) + Decimal("100.30"),
            "customers": 3,
            "cost_of_goods_sold": Decimal("0.00"),
            "total_sales__store_totals": Decimal(BIG) + Decimal("100.30"),
            "customers__store_totals": 3,
            "cost_of_goods_sold__store_totals": Decimal("0.00"),
        }
    ]
    assert body["totals"]["customers"] == 3
