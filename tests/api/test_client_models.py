"""quarry-client 2 (clients/python) against a real `quarry serve` over the API tests' world:
typed answers, the job a run answers, errors with their request id, failed jobs, retries
of connection errors and 5xx (faults injected in the client's transport, in front of the
real server), and AsyncClient doing the same."""

from __future__ import annotations

import importlib.metadata
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import anyio
import httpx
import pytest
from quarry_client import (
    Account,
    AsyncClient,
    Client,
    ExportDetail,
    ExportFailed,
    ExportJob,
    QuarryError,
    Record,
    Store,
    __version__,
)

from exports.jobs.execute import execute_job
from exports.jobs.lifecycle import FAILED, finish
from tests.api.world import World
from tests.exports.conftest import apply_yaml
from tests.factories import running_api

IDEMPOTENCY = "idempotency-key"


@pytest.fixture(scope="module")
def url(world: World, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    log = tmp_path_factory.mktemp("client-models") / "serve.log"
    home, secret = world.settings.home, world.settings.secret_key or ""
    with running_api(home, secret, log) as port:
        yield f"http://127.0.0.1:{port}"


@pytest.fixture(scope="module")
def config_id(world: World) -> str:
    document = {"exports": [{
        "name": "Client models", "entity_type": "orders", "format": "csv",
        "columns": ["order_name", "total_price"], "stores": ["st_a1"],
    }]}  # fmt: skip
    return apply_yaml(world, "a", document)["Client models"]


@pytest.fixture
def client(url: str, world: World) -> Iterator[Client]:
    with Client(url, world.keys["a_all"], retry_backoff=0.01) as made:
        yield made


class Faults:
    """What the injected transports do to the requests whose path ends with `path`, one
    fault per request in order, then nothing: `refuse` (the connection fails before
    anything is sent), `lose` (the server answers, the answer is lost), `proxy_503` (a
    proxy's 503 page, the server never asked)."""

    def __init__(self, path: str, *faults: str) -> None:
        self.path = path
        self.faults = list(faults)
        self.seen: list[httpx.Request] = []

    def next_fault(self, request: httpx.Request) -> str | None:
        if not request.url.path.endswith(self.path):
            return None
        self.seen.append(request)
        return self.faults.pop(0) if self.faults else None

    @staticmethod
    def proxy_page(request: httpx.Request) -> httpx.Response:
        return httpx.Response(503, text="<html>upstream unavailable</html>", request=request)


class FaultyTransport(httpx.BaseTransport):
    def __init__(self, faults: Faults) -> None:
        self.faults = faults
        self.inner = httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        fault = self.faults.next_fault(request)
        if fault == "refuse":
            raise httpx.ConnectError("connection refused (injected)", request=request)
        if fault == "proxy_503":
            return self.faults.proxy_page(request)
        response = self.inner.handle_request(request)
        if fault == "lose":
            response.read()
            raise httpx.ReadError("connection reset (injected)", request=request)
        return response

    def close(self) -> None:
        self.inner.close()


class AsyncFaultyTransport(httpx.AsyncBaseTransport):
    def __init__(self, faults: Faults) -> None:
        self.faults = faults
        self.inner = httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        fault = self.faults.next_fault(request)
        if fault == "refuse":
            raise httpx.ConnectError("connection refused (injected)", request=request)
        if fault == "proxy_503":
            return self.faults.proxy_page(request)
        response = await self.inner.handle_async_request(request)
        if fault == "lose":
            await response.aread()
            raise httpx.ReadError("connection reset (injected)", request=request)
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


def test_the_version_is_the_installed_package_s() -> None:
    assert __version__ == importlib.metadata.version("quarry-client")


def test_answers_are_typed_models_that_still_answer_keys(
    client: Client, url: str, world: World
) -> None:
    raw = httpx.get(f"{url}/v1/account", headers={"Authorization": f"Bearer {world.keys['a_all']}"})
    account = client.account()
    assert isinstance(account, Account) and account.raw == raw.json()
    assert account.account_id == world.accounts["a"] == account["account_id"]
    assert sorted(account.scopes) == ["exports", "read_data"] and account.store_count == 3
    stores = {s.id: s for s in client.stores()}
    assert all(isinstance(s, Store) for s in stores.values())
    assert isinstance(stores["st_a1"].last_synced_at, datetime)
    assert stores["st_a1"].last_synced_at.isoformat().startswith("2024-04-01T09:30:15")
    assert stores["st_a2"].last_synced_at is None and stores["st_a2"].currency == "EUR"
    orders = next(d for d in client.datasets() if d.name == "orders")
    assert orders.kind == "records" and "total_price" in {f.name for f in orders.fields}

    records = list(client.records("orders", store_ids=["st_a1"], page_size=2))
    assert records and all(isinstance(r, Record) for r in records)
    first = records[0]
    assert first.id == first["id"] == world.records("orders", "st_a1")[0]["id"]
    assert first.store_id == "st_a1" and first.total_price == first["total_price"]
    with pytest.raises(AttributeError):
        _ = first.no_such_field
    assert client.record("orders", first.id) == first


def test_an_export_run_answers_a_queued_job_and_downloads(
    client: Client, world: World, config_id: str, tmp_path: Path
) -> None:
    export = client.export(config_id)
    detail = export.get()
    assert isinstance(detail, ExportDetail) and detail.name == "Client models"
    assert detail.destination.kind == "local" and detail.parts[0].entity_type == "orders"
    assert detail["name"] == "Client models" and isinstance(detail.created_at, datetime)
    listed = {e.id: e for e in client.exports()}
    assert listed[config_id].format == "csv"

    job = export.run()
    assert job.status == "queued"  # the 202's, without a refresh
    assert isinstance(job.last, ExportJob) and job.last.job_id == job.id
    execute_job(world.settings, world.registry, job.id, "client-models-test")
    finished = job.wait(poll_seconds=0.1, timeout=30)
    assert finished.status == "completed" and finished.file_name
    assert isinstance(finished.finished_at, datetime)
    saved = job.download(tmp_path)
    assert saved.name == finished.file_name and saved.read_bytes().startswith(b"Order")
    assert job.id in {j.job_id for j in client.jobs(export_id=config_id)}


def test_errors_carry_the_request_id_and_failures_no_invented_status(
    client: Client, world: World, config_id: str
) -> None:
    with pytest.raises(QuarryError) as unknown:
        client.export("exp_nope").get()
    assert unknown.value.status == 404 and unknown.value.request_id
    assert unknown.value.request_id == unknown.value.headers["x-request-id"]
    assert unknown.value.request_id in str(unknown.value)

    job = client.export(config_id).run()
    with world.registry.session() as session:
        finish(session, job.id, FAILED, error="the destination refused the file")
    with pytest.raises(ExportFailed) as failed:
        job.wait(poll_seconds=0.1, timeout=30)
    assert not isinstance(failed.value, QuarryError) and not hasattr(failed.value, "status")
    assert failed.value.error == failed.value.detail == "the destination refused the file"
    assert failed.value.job.status == "failed" and failed.value.job_id == job.id
    assert failed.value.request_id
    assert job.wait(poll_seconds=0.1, raise_on_failure=False).error == failed.value.error


def test_connection_errors_and_5xx_of_reads_are_retried(url: str, world: World) -> None:
    faults = Faults("/v1/account", "refuse", "proxy_503", "lose")
    with Client(
        url, world.keys["a_all"], transport=FaultyTransport(faults), retry_backoff=0.01
    ) as c:
        assert c.account().account_id == world.accounts["a"]
    assert len(faults.seen) == 4
    # Past max_retries the last error is raised.
    faults = Faults("/v1/account", "refuse", "refuse")
    with (
        Client(url, world.keys["a_all"], transport=FaultyTransport(faults), max_retries=1,
               retry_backoff=0.01) as c,
        pytest.raises(httpx.ConnectError),
    ):  # fmt: skip
        c.account()
    faults = Faults("/v1/account", "proxy_503", "proxy_503")
    with (
        Client(url, world.keys["a_all"], transport=FaultyTransport(faults), max_retries=1,
               retry_backoff=0.01) as c,
        pytest.raises(QuarryError) as page,
    ):  # fmt: skip
        c.account()
    assert page.value.status == 503 and "upstream unavailable" in page.value.detail


def test_a_run_whose_answer_is_lost_is_retried_with_one_key(
    url: str, world: World, config_id: str
) -> None:
    faults = Faults("/run", "lose", "proxy_503")
    transport = FaultyTransport(faults)
    with Client(url, world.keys["a_all"], transport=transport, retry_backoff=0.01) as c:
        before = {j.job_id for j in c.jobs(export_id=config_id)}
        job = c.export(config_id).run()
        after = {j.job_id for j in c.jobs(export_id=config_id)}
        # A POST without a key is not repeated: the 503 is raised at once.
        plain = Faults("/run", "proxy_503")
        with (
            Client(url, world.keys["a_all"], transport=FaultyTransport(plain)) as bare,
            pytest.raises(QuarryError),
        ):
            bare.request("POST", f"/v1/exports/{config_id}/run")
        assert len(plain.seen) == 1
    assert len(faults.seen) == 3
    keys = {request.headers[IDEMPOTENCY] for request in faults.seen}
    assert len(keys) == 1 and keys.pop().startswith("quarry-client-")
    assert after - before == {job.id}  # the server started one job, not two


def test_the_async_client_has_the_same_surface(
    url: str, world: World, config_id: str, tmp_path: Path
) -> None:
    async def main() -> None:
        faults = Faults("/v1/stores", "refuse", "proxy_503")
        async with AsyncClient(
            url, world.keys["a_all"], transport=AsyncFaultyTransport(faults), retry_backoff=0.01
        ) as quarry:
            account = await quarry.account()
            assert account.account_id == world.accounts["a"]
            stores = await quarry.stores()
            assert {s.id for s in stores} == {"st_a1", "st_a2", "st_a3"} and len(faults.seen) == 3
            records = [r async for r in quarry.records("orders", store_ids=["st_a1"], page_size=2)]
            assert [r.id for r in records] == [r["id"] for r in world.records("orders", "st_a1")]
            result = await quarry.query("FROM sales SHOW orders SINCE 2024-01-01 UNTIL 2024-12-31")
            assert result.columns[0]["name"] == "orders"
            export = quarry.export(config_id)
            assert (await export.get()).name == "Client models"
            job = await export.run(idempotency_key="async-client-test")
            assert job.status == "queued"
            assert (await export.run(idempotency_key="async-client-test")).id == job.id
            await anyio.to_thread.run_sync(
                execute_job, world.settings, world.registry, job.id, "async-client-test"
            )
            finished = await job.wait(poll_seconds=0.1, timeout=30)
            assert finished.status == "completed"
            saved = await job.download(tmp_path)
            assert saved.name == finished.file_name and saved.stat().st_size > 0
            assert job.id in {j.job_id async for j in quarry.jobs(export_id=config_id)}
            with pytest.raises(QuarryError) as unknown:
                await quarry.export("exp_nope").get()
            assert unknown.value.status == 404 and unknown.value.request_id

    anyio.run(main)
