"""POST /admin/api/{version}/graphql.json in process: the same gates as /v1/query, answered
in Shopify's shape (GraphQL ACCESS_DENIED, 429 with Retry-After), a real GraphQL parser."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.api.conftest import Client
from tests.api.query_world import QueryAccount, StoreSpec, add_account, sale, write_sales
from tests.api.world import World
from warehouse.query import MAX_QUERY_LENGTH

URL = "/admin/api/2026-10/graphql.json"
DOCUMENT = "query ($q: String!) { shopifyqlQuery(query: $q) { parseErrors } }"


def _post(client: Client, key: str, body: Any) -> Any:
    return client.request("POST", URL, headers={"X-Shopify-Access-Token": key}, json=body)


@pytest.mark.parametrize(("key_name", "reason"), [("c_all", "plan"), ("a_exports", "read_data")])
def test_plan_and_scope_are_graphql_access_denied(
    client: Client, world: World, key_name: str, reason: str
) -> None:
    response = _post(client, world.keys[key_name], {"query": DOCUMENT, "variables": {"q": "x"}})
    assert response.status_code == 200
    (error,) = response.json()["errors"]
    assert error["extensions"]["code"] == "ACCESS_DENIED" and reason in error["message"]


def test_graphql_itself_is_parsed_and_validated(client: Client, world: World) -> None:
    key = world.keys["a_all"]
    missing = _post(client, key, {"query": DOCUMENT})  # $q not given
    assert "errors" in missing.json() and "$q" in missing.json()["errors"][0]["message"]
    broken = _post(client, key, {"query": "{ shopifyqlQuery(query: "})
    assert "Syntax Error" in broken.json()["errors"][0]["message"]
    aliased = _post(
        client, key, {"query": "{ me: currentAppInstallation { accessScopes { handle } } }"}
    )
    handles = {s["handle"] for s in aliased.json()["data"]["me"]["accessScopes"]}
    assert "read_reports" in handles
    assert _post(client, key, "not an object").status_code == 400


def test_any_release_or_unstable_is_a_version(client: Client, world: World) -> None:
    headers = {"X-Shopify-Access-Token": world.keys["a_all"]}
    body = {"query": DOCUMENT, "variables": {"q": "FROM sales SHOW orders"}}
    for version in ("2024-01", "2026-10", "unstable"):
        answered = client.request(
            "POST", f"/admin/api/{version}/graphql.json", headers=headers, json=body
        )
        assert answered.status_code == 200, version
        assert answered.json()["data"]["shopifyqlQuery"]["parseErrors"] == []
    for version in ("2026-13", "latest", "Unstable", "2026-1"):
        refused = client.request(
            "POST", f"/admin/api/{version}/graphql.json", headers=headers, json=body
        )
        assert refused.status_code == 404 and refused.json() == {"errors": "Not Found"}, version


@pytest.mark.parametrize("key_name", ["a_all", "a_exports"])
@pytest.mark.parametrize(
    "body",
    [
        "[" * 1000 + "]" * 1000,
        '{"query": "{ __typename }", "variables": ' + '{"a":' * 1000 + "1" + "}" * 1000 + "}",
    ],
    ids=["list", "variables"],
)
def test_a_deeply_nested_body_is_a_graphql_400(
    client: Client, world: World, key_name: str, body: str
) -> None:
    # json.loads raised RecursionError here: a 500 with a traceback, for any live key.
    response = client.request(
        "POST",
        URL,
        headers={"X-Shopify-Access-Token": world.keys[key_name]},
        content=body,
    )
    assert response.status_code == 400, response.text
    (error,) = response.json()["errors"]
    assert "recursion limit exceeded" in error["message"]


@pytest.mark.parametrize(
    "headers",
    [
        [("X-Shopify-Access-Token", "a_all"), ("X-Shopify-Access-Token", "a_read")],
        [("X-Shopify-Access-Token", "a_all"), ("X-Shopify-Access-Token", "a_all")],
        [("Authorization", "Bearer a_all"), ("Authorization", "Bearer a_read")],
        [("X-Shopify-Access-Token", "a_all"), ("Authorization", "Bearer a_read")],
    ],
    ids=["two-tokens", "one-token-twice", "two-bearers", "token-and-bearer"],
)
def test_a_key_sent_twice_is_refused(
    client: Client, world: World, headers: list[tuple[str, str]]
) -> None:
    # The first used to win silently; /v1 refuses two Authorization headers.
    sent = [
        (name, value.replace(key, world.keys[key]))
        for name, value in headers
        for key in [value.split()[-1]]
    ]
    response = client.request("POST", URL, headers=sent, json={"query": "{ __typename }"})
    assert response.status_code == 401, response.text
    assert "once" in response.json()["errors"]


def test_the_rate_limit_applies_with_retry_after(make_client: Any, world: World) -> None:
    limited: Client = make_client(rate_limit="1/60")
    key = world.keys["a_all"]
    assert _post(limited, key, {"query": "{ __typename }"}).status_code == 200
    refused = _post(limited, key, {"query": "{ __typename }"})
    assert refused.status_code == 429 and int(refused.headers["retry-after"]) >= 1


def test_each_query_of_a_document_is_charged(make_client: Any, world: World) -> None:
    # Three aliases, a key with two requests a minute: the request pays for the first
    # query, the second is charged the other, and the third finds the limit spent.
    limited: Client = make_client(rate_limit="2/60")
    fields = " ".join(
        f'q{i}: shopifyqlQuery(query: "FROM sales SHOW total_sales SINCE -{i + 1}d") '
        "{ parseErrors }"
        for i in range(3)
    )
    response = _post(limited, world.keys["a_all"], {"query": "{ " + fields + " }"})
    assert response.status_code == 200
    body = response.json()
    assert body["data"]["q0"] == {"parseErrors": []} == body["data"]["q1"]
    assert body["data"]["q2"] is None
    (error,) = body["errors"]
    assert error["path"] == ["q2"] and error["extensions"]["code"] == "THROTTLED"
    assert "rate limit of 2 requests" in error["message"]
    assert response.headers["x-ratelimit-remaining"] == "0"
    # The key's limit is spent for the next request too.
    assert _post(limited, world.keys["a_all"], {"query": "{ __typename }"}).status_code == 429


TABLE = """query ($q: String!) {
  shopifyqlQuery(query: $q) {
    parseErrors
    tableData {
      columns {
        name dataType displayName shortDisplayName columnOrigin
        dynamicColumnMetadata { type originalColumnName comparisonReference aggregatedBy }
      }
      rows
      rowMetadata {
        nullCellTranslations { columnName displayText }
        rawResourceIds
        topNRemainderColumnNames
      }
    }
  }
}"""


@pytest.fixture(scope="module")
def shop(world: World) -> Iterator[QueryAccount]:
    """Two stores: three products in March 2024 and one sale in February."""
    account = add_account(
        world,
        "GraphQL",
        "USD",
        "UTC",
        {"st_g_a": StoreSpec("North", "USD", "UTC"), "st_g_b": StoreSpec("South", "USD", "UTC")},
        {"all": (["read_data"], None)},
    )
    write_sales(
        world,
        "st_g_a",
        [
            sale(account, "st_g_a", "a1", "2024-03-05T10:00:00Z", "100", product_title="Hat"),
            sale(account, "st_g_a", "a2", "2024-03-06T10:00:00Z", "30", product_title="Tee"),
            sale(account, "st_g_a", "a3", "2024-02-06T10:00:00Z", "40", product_title="Hat"),
        ],
    )
    write_sales(
        world,
        "st_g_b",
        [sale(account, "st_g_b", "b1", "2024-03-07T10:00:00Z", "5", product_title="Mug")],
    )
    yield account


def _table(client: Client, key: str, query: str) -> dict[str, Any]:
    response = _post(client, key, {"query": TABLE, "variables": {"q": query}})
    assert response.status_code == 200, response.text
    answer = response.json()["data"]["shopifyqlQuery"]
    assert answer["parseErrors"] == []
    table: dict[str, Any] = answer["tableData"]
    assert len(table["rowMetadata"]) == len(table["rows"])
    return table


def test_generated_columns_say_where_they_come_from(client: Client, shop: QueryAccount) -> None:
    table = _table(
        client,
        shop.keys["all"],
        "FROM sales SHOW total_sales GROUP BY store SINCE 2024-03-01 UNTIL 2024-03-31 "
        "COMPARE TO 2024-02-01 UNTIL 2024-02-29 WITH TOTALS, PERCENT_CHANGE ORDER BY store",
    )
    columns = {c["name"]: c for c in table["columns"]}
    assert columns["store"]["columnOrigin"] == "REQUESTED"
    assert columns["store"]["dynamicColumnMetadata"] is None
    assert columns["total_sales"]["columnOrigin"] == "REQUESTED"
    shown = [n for n in columns if not n.endswith("__totals")]
    (compared,) = [n for n in shown if n.startswith("comparison_total_sales__")]
    (percent,) = [n for n in shown if n.startswith("percent_change_total_sales__")]
    for name, kind in ((compared, "COMPARISON"), (percent, "PERCENT_CHANGE")):
        assert columns[name]["columnOrigin"] == "GENERATED"
        meta = columns[name]["dynamicColumnMetadata"]
        assert meta["type"] == kind and meta["originalColumnName"] == "total_sales"
        assert meta["aggregatedBy"] == ["store"] and meta["comparisonReference"]
    # WITH TOTALS: `{column}__totals` on every row, as ShopifyQL adds them.
    totals = columns["total_sales__totals"]
    assert totals["columnOrigin"] == "GENERATED" and totals["dataType"] == "MONEY"
    assert totals["dynamicColumnMetadata"]["type"] == "TOTALS"
    assert totals["dynamicColumnMetadata"]["aggregatedBy"] == []
    assert columns[f"{compared}__totals"]["dynamicColumnMetadata"]["type"] == "COMPARISON_TOTALS"
    assert [r["total_sales"] for r in table["rows"]] == ["130.00", "5.00"]
    assert {r["total_sales__totals"] for r in table["rows"]} == {"135.00"}
    assert {r[f"{compared}__totals"] for r in table["rows"]} == {"40.00"}
    # South sold nothing in February: its comparison and percent cells are null, and say so.
    north, south = table["rowMetadata"]
    assert north["nullCellTranslations"] == []
    nulls = {t["columnName"] for t in south["nullCellTranslations"]}
    assert percent in nulls and all(t["displayText"] for t in south["nullCellTranslations"])
    # The store column's raw ids are the stores behind the name; other columns have none.
    index = [c["name"] for c in table["columns"]].index("store")
    assert north["rawResourceIds"][index] == ["st_g_a"]
    assert south["rawResourceIds"][index] == ["st_g_b"]
    assert len(north["rawResourceIds"]) == len(table["columns"])
    assert north["rawResourceIds"][index + 1] == []


def test_top_n_remainder_rows_are_marked(client: Client, shop: QueryAccount) -> None:
    table = _table(
        client,
        shop.keys["all"],
        "FROM sales SHOW total_sales GROUP BY TOP 1 product_title "
        "SINCE 2024-03-01 UNTIL 2024-03-31",
    )
    by_product = {
        r["product_title"]: m["topNRemainderColumnNames"]
        for r, m in zip(table["rows"], table["rowMetadata"], strict=True)
    }
    assert by_product == {"Hat": [], "Other": ["product_title"]}
    assert [r["total_sales"] for r in table["rows"]] == ["100.00", "35.00"]


def test_group_totals_and_running_totals_are_generated(client: Client, shop: QueryAccount) -> None:
    table = _table(
        client,
        shop.keys["all"],
        "FROM sales SHOW total_sales GROUP BY store, product_title "
        "SINCE 2024-03-01 UNTIL 2024-03-31 WITH GROUP_TOTALS",
    )
    meta = {c["name"]: c["dynamicColumnMetadata"] for c in table["columns"]}
    assert meta["total_sales__store_totals"] == {
        "type": "TOTALS",
        "originalColumnName": "total_sales",
        "comparisonReference": None,
        "aggregatedBy": ["store"],
    }
    series = _table(
        client,
        shop.keys["all"],
        "FROM sales SHOW total_sales TIMESERIES month SINCE 2024-02-01 UNTIL 2024-03-31 "
        "WITH CUMULATIVE_VALUES",
    )
    meta = {c["name"]: c["dynamicColumnMetadata"] for c in series["columns"]}
    assert meta["total_sales__cumulative"]["type"] == "CUMULATIVE"
    assert meta["total_sales__cumulative"]["aggregatedBy"] == ["month"]
    assert [r["total_sales__cumulative"] for r in series["rows"]] == ["40.00", "175.00"]


@pytest.mark.parametrize(
    ("query", "message"),
    [
        (
            "FROM sales SHOW total_sales VISUALIZE total_sales TYPE pie_chart",
            "Unknown visualization type 'pie_chart'. (line 1, column 56)",
        ),
        (
            "FROM sessions SHOW sessions",
            "ShopifyQL has a 'sessions' schema, but Quarry does not sync that data",
        ),
        # The length /v1/query's schema holds, held here too: no schema guards this door.
        (
            "FROM sales SHOW total_sales" + " " * MAX_QUERY_LENGTH,
            f"The query is {MAX_QUERY_LENGTH + 27:,} characters long, more than the "
            f"{MAX_QUERY_LENGTH:,} a query may have. (line 1, column 1)",
        ),
    ],
)
def test_shopify_refusals_are_parse_errors(
    client: Client, shop: QueryAccount, query: str, message: str
) -> None:
    """As ShopifyQL answers them (issue 31): parseErrors at the token, no tableData."""
    response = _post(client, shop.keys["all"], {"query": TABLE, "variables": {"q": query}})
    answer = response.json()["data"]["shopifyqlQuery"]
    assert answer["tableData"] is None
    (error,) = answer["parseErrors"]
    assert message in error, error
