"""Shopify's own `shopifyql` SDK, unchanged but for its URL, against Quarry's
POST /admin/api/{version}/graphql.json on the shared stack's real server: the same figures
as /v1/query for a time series, a top-N and a comparison; query errors; store scope; a bad
key refused the way Shopify refuses it."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pandas as pd
import pytest
import requests
from shopifyql import ShopifyQLClient

from registry.accounts import create_account, create_store
from registry.keys import create_key
from tests.exports.conftest import Stack

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("exports-end-to-end")]

WINDOW = "SINCE 2024-01-01 UNTIL 2024-05-31"
QUERIES = {
    "time series": f"FROM sales SHOW total_sales, orders TIMESERIES month {WINDOW}",
    "top N": f"FROM sales SHOW net_sales GROUP BY product_title {WINDOW} "
    "ORDER BY net_sales DESC LIMIT 5",
    "comparison": "FROM sales SHOW total_sales GROUP BY store SINCE 2024-04-01 UNTIL 2024-04-30 "
    "COMPARE TO previous_period",
}


@pytest.fixture
def sdk(stack: Stack, monkeypatch: pytest.MonkeyPatch) -> Iterator[ShopifyQLClient]:
    """The SDK as a user has it, its URL property pointed at the local server."""
    base = f"http://127.0.0.1:{stack.api_port}"
    monkeypatch.setattr(
        ShopifyQLClient,
        "url",
        property(lambda self: f"{base}/admin/api/{self._api_version}/graphql.json"),
    )
    yield ShopifyQLClient("quarry-demo", stack.key, max_retries=0)


def _v1(stack: Stack, query: str) -> dict[str, Any]:
    response = stack.request("POST", "/v1/query", json={"query": query})
    assert response.status_code == 200, response.text
    return response.json()


@pytest.mark.parametrize("name", list(QUERIES))
def test_the_sdk_gives_the_figures_of_v1_query(
    sdk: ShopifyQLClient, stack: Stack, name: str
) -> None:
    query = QUERIES[name]
    expected = _v1(stack, query)
    frame = sdk.query_pandas(query)
    assert list(frame.columns) == [c["name"] for c in expected["columns"]]
    assert len(frame) == len(expected["rows"]) > 0
    for column in expected["columns"]:
        got = frame[column["name"]].tolist()
        want = [row[column["name"]] for row in expected["rows"]]
        if column["type"] in ("money", "number", "percent"):
            # Exactly the same decimals (Float64 in the frame, as the SDK types MONEY).
            assert [None if pd.isna(g) else Decimal(str(g)) for g in got] == [
                None if w is None else Decimal(str(w)) for w in want
            ], column
        elif column["name"] == "month":
            assert [g.date().isoformat() for g in got] == want
        else:
            assert got == want, column


def test_the_table_follows_shopify_s_reference(sdk: ShopifyQLClient) -> None:
    document = """
    query Report($q: String!) {
      report: shopifyqlQuery(query: $q) {
        tableData { columns { name dataType displayName } rows }
        parseErrors
      }
    }"""
    answer = sdk.graphql_query(document, {"q": QUERIES["time series"]})
    report = answer["data"]["report"]
    assert report["parseErrors"] == []
    columns = {c["name"]: c for c in report["tableData"]["columns"]}
    assert columns["month"]["dataType"] == "MONTH_TIMESTAMP"
    assert columns["total_sales"] == {
        "name": "total_sales", "dataType": "MONEY", "displayName": "Total sales",
    }  # fmt: skip
    assert columns["orders"]["dataType"] == "INTEGER"
    first = report["tableData"]["rows"][0]
    assert first["month"] == "2024-01-01"
    Decimal(first["total_sales"])  # a plain decimal string


def test_a_bad_query_comes_back_as_parse_errors(sdk: ShopifyQLClient) -> None:
    document = (
        "query ($q: String!) { shopifyqlQuery(query: $q) { parseErrors tableData { rows } } }"
    )
    answer = sdk.graphql_query(document, {"q": "FROM sales SHOW no_such_metric"})
    result = answer["data"]["shopifyqlQuery"]
    assert result["tableData"] is None
    assert any("no_such_metric" in error for error in result["parseErrors"])
    # The SDK's own query() refuses a result without a table, as it does against Shopify.
    with pytest.raises(ValueError, match="no valid table data"):
        sdk.query("FROM sales SHOW no_such_metric")


def test_other_fields_are_graphql_errors(sdk: ShopifyQLClient) -> None:
    with pytest.raises(ValueError, match="Cannot query field 'orders'"):
        sdk.graphql_query("{ orders(first: 1) { edges { node { id } } } }")


def test_another_account_sees_only_its_stores(
    stack: Stack, sdk: ShopifyQLClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    with stack.registry.session() as session:
        other = create_account(session, name="Other", currency="USD", timezone="UTC").id
        create_store(
            session, account_id=other, name="Lonely", domain="lonely.example",
            currency="USD", timezone="UTC", platform="demo",
        )  # fmt: skip
        key = create_key(session, account_id=other, scopes=["read_data"]).secret
    theirs = ShopifyQLClient("quarry-demo", key, max_retries=0)
    frame = theirs.query_pandas(f"FROM sales SHOW total_sales GROUP BY store {WINDOW}")
    assert set(frame["store"]) <= {"Lonely"}
    mine = sdk.query_pandas(f"FROM sales SHOW total_sales GROUP BY store {WINDOW}")
    assert "Lonely" not in set(mine["store"]) and len(mine) == len(stack.store_ids)


def test_a_bad_key_is_refused_as_shopify_refuses_it(stack: Stack) -> None:
    url = f"http://127.0.0.1:{stack.api_port}/admin/api/2025-10/graphql.json"
    for headers in ({"X-Shopify-Access-Token": "shpat_wrong"}, {}):
        response = requests.post(url, json={"query": "{ __typename }"}, headers=headers)
        assert response.status_code == 401
        assert response.json() == {
            "errors": "[API] Invalid API key or access token (unrecognized login or wrong password)"
        }
    bearer = requests.post(
        url, json={"query": "{ __typename }"}, headers={"Authorization": f"Bearer {stack.key}"}
    )
    assert bearer.status_code == 200 and bearer.json() == {"data": {"__typename": "QueryRoot"}}
    assert requests.post(url.replace("2025-10", "latest"), json={}).status_code == 404
