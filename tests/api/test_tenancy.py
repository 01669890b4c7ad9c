"""The tenancy matrix: for each key (two accounts, whole-account and narrowed store scopes)
and every endpoint, nothing is read across accounts or outside the key's stores."""

from __future__ import annotations

import pytest

from tests.api.conftest import Client, assert_problem
from tests.api.world import World
from warehouse.catalog import RECORD_DATASETS

ALL_STORES = ("st_a1", "st_a2", "st_a3", "st_b1", "st_c1")
# key -> the stores it may read
READABLE = {
    "a_all": {"st_a1", "st_a2", "st_a3"},
    "a_read": {"st_a1", "st_a2", "st_a3"},
    "a_one": {"st_a1"},
    "a_two": {"st_a1", "st_a2"},
    "b_all": {"st_b1"},
}


@pytest.mark.parametrize("key", READABLE)
def test_account_and_stores(client: Client, world: World, key: str) -> None:
    account = client.get("/v1/account", key=world.keys[key]).json()
    assert account["account_id"] == world.accounts[key[0]]
    assert account["store_count"] == len(READABLE[key])
    stores = client.get("/v1/stores", key=world.keys[key]).json()
    assert {s["id"] for s in stores} == READABLE[key]


@pytest.mark.parametrize("dataset", RECORD_DATASETS)
@pytest.mark.parametrize("key", READABLE)
def test_lists_read_only_the_key_stores(
    client: Client, world: World, key: str, dataset: str
) -> None:
    response = client.get(f"/v1/{dataset}", key=world.keys[key], params={"page_size": 250})
    records = response.json()["data"]
    expected = world.records(dataset, *sorted(READABLE[key]))
    assert [r["id"] for r in records] == [r["id"] for r in expected]
    assert {r["store_id"] for r in records} <= READABLE[key]


@pytest.mark.parametrize("dataset", RECORD_DATASETS)
@pytest.mark.parametrize("key", READABLE)
def test_store_ids_and_store_id_filters(
    client: Client, world: World, key: str, dataset: str
) -> None:
    for store in ALL_STORES:
        narrowed = client.get(f"/v1/{dataset}", key=world.keys[key], params={"store_ids": store})
        filtered = client.get(f"/v1/{dataset}", key=world.keys[key], params={"store_id": store})
        if store in READABLE[key]:
            expected = [r["id"] for r in world.records(dataset, store)]
            assert [r["id"] for r in narrowed.json()["data"]] == expected
            assert [r["id"] for r in filtered.json()["data"]] == expected
        else:
            assert_problem(narrowed, 400, "Invalid request")
            assert filtered.status_code == 200
            assert filtered.json()["data"] == []


@pytest.mark.parametrize("dataset", RECORD_DATASETS)
@pytest.mark.parametrize("key", READABLE)
def test_by_id_reads_only_the_key_stores(
    client: Client, world: World, key: str, dataset: str
) -> None:
    for store in ALL_STORES:
        for row in world.records(dataset, store)[:3]:
            response = client.get(f"/v1/{dataset}/{row['id']}", key=world.keys[key])
            if store in READABLE[key]:
                assert response.status_code == 200
                assert response.json()["id"] == row["id"]
            else:
                assert_problem(response, 404, "Not found")


@pytest.mark.parametrize("key", ["a_exports", "c_all", "c_exports"])
@pytest.mark.parametrize("dataset", RECORD_DATASETS)
def test_keys_without_data_access_read_no_records(
    client: Client, world: World, key: str, dataset: str
) -> None:
    title = "Insufficient scope" if key == "a_exports" else "Plan upgrade required"
    assert_problem(client.get(f"/v1/{dataset}", key=world.keys[key]), 403, title)
    row = world.records(dataset, "st_a1")[0]
    assert_problem(client.get(f"/v1/{dataset}/{row['id']}", key=world.keys[key]), 403, title)
