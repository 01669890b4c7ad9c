"""POST /admin/api/{version}/graphql.json in process: the same gates as /v1/query, answered
in Shopify's shape (GraphQL ACCESS_DENIED, 429 with Retry-After), a real GraphQL parser."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.conftest import Client
from tests.api.world import World

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


def test_the_rate_limit_applies_with_retry_after(make_client: Any, world: World) -> None:
    limited: Client = make_client(rate_limit="1/60")
    key = world.keys["a_all"]
    assert _post(limited, key, {"query": "{ __typename }"}).status_code == 200
    refused = _post(limited, key, {"query": "{ __typename }"})
    assert refused.status_code == 429 and int(refused.headers["retry-after"]) >= 1
