"""quarry-client (clients/python) against the real API of the shared stack (uvicorn, and
Dagster's orchestrator for the export): queries as rows and DataFrames, records across
pages, an export run, waited for and downloaded, and problems raised as exceptions."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from quarry_client import Client, QuarryError

from tests.exports.conftest import Stack, apply

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("exports-end-to-end")]

QUERY = "FROM sales SHOW total_sales, orders GROUP BY store SINCE 2024-01-01 UNTIL 2024-05-31"


@pytest.fixture(scope="module")
def client(stack: Stack) -> Iterator[Client]:
    with Client(f"http://127.0.0.1:{stack.api_port}", stack.key) as made:
        yield made


def test_a_query_gives_the_api_s_rows_and_a_dataframe(client: Client, stack: Stack) -> None:
    direct = stack.request("POST", "/v1/query", json={"query": QUERY}).json()
    result = client.query(QUERY)
    assert result.rows == direct["rows"] and result.columns == direct["columns"]
    assert result.currency == direct["currency"] and result.window == direct["window"]
    frame = client.query_pandas(QUERY)
    assert list(frame.columns) == [c["name"] for c in direct["columns"]]
    assert frame.to_dict("records") == direct["rows"]


def test_records_are_iterated_across_pages(client: Client, stack: Stack) -> None:
    store = stack.store_ids[0]
    small = list(client.records("orders", page_size=7, store_ids=[store], fields="id"))
    whole = list(client.records("orders", store_ids=[store], fields="id"))
    assert len(small) > 7
    assert small == whole
    assert len({r["id"] for r in small}) == len(small)


def test_problems_are_exceptions_with_their_fields(client: Client, stack: Stack) -> None:
    with pytest.raises(QuarryError) as bad_query:
        client.query("FROM sales SHOW nonsense_metric")
    assert bad_query.value.status == 400 and bad_query.value.title == "Invalid query"
    assert bad_query.value.errors and "line" in bad_query.value.errors[0]
    with pytest.raises(QuarryError) as bad_filter:
        list(client.records("orders", financial_status=["paid"], page_size=0))
    assert bad_filter.value.errors[0]["field"] == "page_size"
    with (
        Client(f"http://127.0.0.1:{stack.api_port}", "qk_wrong") as stranger,
        pytest.raises(QuarryError) as refused,
    ):
        stranger.account()
    assert refused.value.status == 401 and refused.value.detail


@pytest.fixture(scope="module")
def orchestrated(stack: Stack) -> Iterator[Stack]:
    """Dagster up for the export run, and down again after (test_end_to_end starts with
    it down)."""
    stack.start_dagster()
    try:
        yield stack
    finally:
        stack.stop_dagster()


def test_an_export_runs_waits_and_downloads(
    client: Client, orchestrated: Stack, tmp_path: Path
) -> None:
    apply(orchestrated, {"exports": [{
        "name": "Client export", "entity_type": "orders", "format": "csv",
        "columns": ["order_name", "total_price"], "stores": [orchestrated.store_ids[0]],
    }]})  # fmt: skip
    export = client.export(orchestrated.config_id("Client export"))
    assert export.get()["name"] == "Client export"
    job = export.run(idempotency_key="client-test-1")
    assert export.run(idempotency_key="client-test-1").id == job.id
    finished = job.wait(poll_seconds=1, timeout=180)
    assert finished["status"] == "completed", finished
    saved = job.download(tmp_path)
    assert saved.name == finished["file_name"]
    keyed = orchestrated.download(job.id)
    assert saved.read_bytes() == keyed.content
    assert job.id in {j["job_id"] for j in client.jobs(export_id=export.id)}
