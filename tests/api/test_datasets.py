"""GET /v1/datasets: the catalog, exactly as warehouse.catalog defines it."""

from __future__ import annotations

from tests.api.conftest import Client, assert_problem
from tests.api.world import World
from warehouse.catalog import DATASETS


def test_datasets_are_the_catalog(client: Client, world: World) -> None:
    response = client.get("/v1/datasets", key=world.keys["a_exports"])
    assert response.status_code == 200
    assert response.headers["cache-control"] == "no-store"
    body = response.json()
    assert body == [d.public() for d in DATASETS]
    names = [d["name"] for d in body]
    assert {"sales", "orders", "customers", "products", "draft_orders"} <= set(names)


def test_sales_and_its_total_sales(client: Client, world: World) -> None:
    body = client.get("/v1/datasets", key=world.keys["a_all"]).json()
    sales = next(d for d in body if d["name"] == "sales")
    assert sales["title"] == "Sales" and sales["kind"] == "query"
    total = next(f for f in sales["fields"] if f["name"] == "total_sales")
    assert (total["type"], total["role"], total["default_aggregation"]) == (
        "money",
        "metric",
        "sum",
    )


def test_field_attributes_use_the_allowed_values(client: Client, world: World) -> None:
    for entry in client.get("/v1/datasets", key=world.keys["a_all"]).json():
        assert {"name", "title", "description", "fields"} <= set(entry)
        for field in entry["fields"]:
            assert field["type"] in {"string", "number", "money", "date", "boolean", "percent"}
            assert field["role"] in {"dimension", "metric"}
            if field["role"] == "dimension":
                assert field["default_aggregation"] is None
            else:
                assert field["default_aggregation"] in {
                    "sum",
                    "avg",
                    "min",
                    "max",
                    "count",
                    "count_distinct",
                    "median",
                }


def test_orders_mark_order_count_aggregate_only(client: Client, world: World) -> None:
    body = client.get("/v1/datasets", key=world.keys["a_all"]).json()
    orders = next(d for d in body if d["name"] == "orders")
    flags = {f["name"]: f["aggregate_only"] for f in orders["fields"]}
    assert flags["order_count"] is True and flags["total_price"] is False


def test_datasets_need_the_api_plan(client: Client, world: World) -> None:
    assert_problem(
        client.get("/v1/datasets", key=world.keys["c_all"]), 403, "Plan upgrade required"
    )
