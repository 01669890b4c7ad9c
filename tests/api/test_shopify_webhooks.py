"""POST /webhooks/shopify: deliveries signed with the app's secret ask for one debounced
incremental sync of their store, recorded in the registry; forgeries get 401; a repeated
delivery id does nothing. (The housekeeper's side: tests/pipelines/test_triggers.py.)"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
from dagster import DagsterInstance
from sqlalchemy import delete, select

from api.main import create_app
from pipelines.sync.triggers import submit_due_syncs
from platforms.shopify.settings import ShopConnection
from platforms.shopify.webhooks import RedisMemory, signature
from quarry.crypto import SecretBox
from quarry.settings import Settings, load_settings
from registry.accounts import create_account, create_store
from registry.db import Registry
from registry.models import PendingSync, utcnow
from tests.api.conftest import Client, assert_problem

DOMAIN = "webhook-shop.myshopify.com"
SECRET = "app-client-secret-for-webhooks"
STORE_ID = "st_webhook01"
REDIS_URL = "redis://127.0.0.1:6379/0"
UNREACHABLE_REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens on port 1


@pytest.fixture(params=["sqlite", "postgresql"])
def settings(request: pytest.FixtureRequest, quarry_env: Settings, monkeypatch) -> Settings:
    """The registry on each database it supports (PostgreSQL: a fresh one per test)."""
    monkeypatch.setenv("QUARRY_SHOPIFY_WEBHOOK_DEBOUNCE_SECONDS", "30")
    if request.param == "sqlite":
        return quarry_env
    monkeypatch.setenv("QUARRY_DATABASE_URL", request.getfixturevalue("postgres_url"))
    return load_settings()


@pytest.fixture
def client(settings: Settings, portal) -> Iterator[Client]:
    quarry_env = settings
    registry = Registry(quarry_env)
    with registry.session() as session:
        account = create_account(session, name="Acme", currency="EUR", timezone="UTC")
        create_store(
            session,
            account_id=account.id,
            name="Webhook Shop",
            domain=DOMAIN,
            currency="EUR",
            timezone="UTC",
            platform="shopify",
            connection_secret=ShopConnection(
                DOMAIN, None, "2026-10", client_id="cid", client_secret=SECRET
            ).seal(SecretBox(quarry_env.fernet_keys)),
            store_id=STORE_ID,
        )
    registry.dispose()
    app = create_app(quarry_env)
    one = Client(app, portal)
    yield one
    if not getattr(app.state, "stopped", False):
        stop(one)


def stop(client: Client) -> None:
    """The API gone: its client, reader and registry closed; nothing of it is used after."""
    client.close()
    client.app.state.reader.close()
    client.app.state.registry.dispose()
    client.app.state.stopped = True


def deliver(
    client: Client,
    body: bytes,
    *,
    secret: str = SECRET,
    webhook_id: str | None = None,
    domain: str = DOMAIN,
):
    return client.request(
        "POST",
        "/webhooks/shopify",
        content=body,
        headers={
            "Content-Type": "application/json",
            "X-Shopify-Topic": "refunds/create",
            "X-Shopify-Shop-Domain": domain,
            "X-Shopify-Hmac-SHA256": signature(secret, body),
            "X-Shopify-Webhook-Id": webhook_id or str(uuid.uuid4()),
            "X-Shopify-API-Version": "2026-10",
        },
    )


BODY = json.dumps({"id": 7900, "order_id": 1001}).encode()


def requested(client: Client) -> list[PendingSync]:
    """Every sync the webhooks asked for, in the app's registry."""
    with client.app.state.registry.session() as session:
        return list(session.scalars(select(PendingSync).order_by(PendingSync.id)))


def test_a_signed_delivery_asks_for_one_debounced_sync(client):
    before = utcnow()
    first = deliver(client, BODY)
    assert first.status_code == 200, first.text
    assert first.json() == {"status": "scheduled"}
    # More changes inside the debounce window join the sync already asked for.
    second = deliver(client, json.dumps({"id": 7901}).encode())
    assert second.json() == {"status": "joined"}
    [pending] = requested(client)
    assert (pending.store_id, pending.reason, pending.run_id) == (STORE_ID, "webhook", None)
    assert before + timedelta(seconds=30) <= pending.due_at <= utcnow() + timedelta(seconds=30)


def test_a_repeated_delivery_id_triggers_nothing(client):
    client.app.state.shopify_webhook_memory = None
    assert deliver(client, BODY, webhook_id="dup-1").json() == {"status": "scheduled"}
    with client.app.state.registry.session() as session:
        session.execute(delete(PendingSync))  # as if the housekeeper had submitted it
    again = deliver(client, BODY, webhook_id="dup-1")
    assert again.status_code == 200
    assert again.json() == {"status": "duplicate"}
    assert requested(client) == []


def test_a_forged_signature_is_refused(client):
    response = deliver(client, BODY, secret="not-the-app-secret")
    assert_problem(response, 401, "Unauthorized")
    assert requested(client) == []


def test_a_tampered_body_is_refused(client):
    headers_body = BODY
    response = client.request(
        "POST",
        "/webhooks/shopify",
        content=headers_body + b" ",
        headers={
            "X-Shopify-Shop-Domain": DOMAIN,
            "X-Shopify-Hmac-SHA256": signature(SECRET, headers_body),
            "X-Shopify-Webhook-Id": "t-1",
        },
    )
    assert_problem(response, 401, "Unauthorized")
    assert requested(client) == []


def test_an_unknown_shop_or_missing_signature_is_refused(client):
    assert_problem(deliver(client, BODY, domain="other.myshopify.com"), 401, "Unauthorized")
    response = client.request("POST", "/webhooks/shopify", content=BODY)
    assert_problem(response, 401, "Unauthorized")
    assert requested(client) == []


def test_delivery_ids_and_debounce_are_shared_through_redis():
    """Two API workers (two memories on one Redis) see one delivery id once."""
    key = f"test:{uuid.uuid4()}"
    one, two = RedisMemory(REDIS_URL), RedisMemory(REDIS_URL)
    assert one.first(key, 60) is True
    assert two.first(key, 60) is False


def test_a_delivery_while_redis_is_unreachable_is_recorded(client, caplog):
    """Redis down: the delivery is still verified and its sync recorded in the registry
    (it used to be a 500, and the sync request lost); this process remembers the ids."""
    client.app.state.shopify_webhook_memory = RedisMemory(UNREACHABLE_REDIS_URL)
    first = deliver(client, BODY, webhook_id="outage-1")
    assert first.status_code == 200, first.text
    assert first.json() == {"status": "scheduled"}
    assert deliver(client, BODY, webhook_id="outage-1").json() == {"status": "duplicate"}
    assert deliver(client, BODY, webhook_id="outage-2").json() == {"status": "joined"}
    [pending] = requested(client)
    assert (pending.store_id, pending.run_id) == (STORE_ID, None)
    assert "Redis unavailable" in caplog.text
    # A forgery is still refused, and remembers nothing.
    assert_problem(deliver(client, BODY, secret="forged"), 401, "Unauthorized")


@pytest.mark.parametrize(
    "header", ["X-Shopify-Hmac-SHA256", "X-Shopify-Shop-Domain", "X-Shopify-Webhook-Id"]
)
def test_a_header_sent_twice_is_refused(client, header):
    valid = {
        "X-Shopify-Shop-Domain": DOMAIN,
        "X-Shopify-Hmac-SHA256": signature(SECRET, BODY),
        "X-Shopify-Webhook-Id": "twice-1",
    }
    headers = [*valid.items(), (header, valid[header])]
    response = client.request("POST", "/webhooks/shopify", content=BODY, headers=headers)
    body = assert_problem(response, 401, "Unauthorized")
    assert header.lower() in body["detail"]
    assert requested(client) == []


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"X-Shopify-Shop-Domain": DOMAIN},
        {"X-Shopify-Shop-Domain": "other.myshopify.com", "X-Shopify-Hmac-SHA256": "x"},
    ],
    ids=["none", "no-signature", "unknown-shop"],
)
def test_the_headers_are_checked_before_the_body_is_read(client, headers):
    """A client naming no connected store is answered without reading its body: one that
    trickles a body cannot hold the connection (/v1 answers 401 at once too)."""
    pulled: list[bytes] = []

    async def trickle() -> AsyncIterator[bytes]:
        for chunk in (b"{", b'"id"', b": 1}"):
            pulled.append(chunk)
            yield chunk

    response = client.request("POST", "/webhooks/shopify", content=trickle(), headers=headers)
    assert_problem(response, 401, "Unauthorized")
    assert pulled == []


def test_a_sync_asked_for_before_a_restart_is_submitted_once(client, settings):
    """Three deliveries, then the API stops before the window ends; two housekeepers
    passing at once after it submit one run, and later passes none."""
    for n in range(3):
        assert deliver(client, json.dumps({"id": n}).encode()).status_code == 200
    stop(client)

    submitted: list[dict[str, str]] = []
    lock = threading.Lock()

    def dagster(_settings: Settings, job_name: str, tags: dict[str, str]) -> str:
        assert job_name == "sync_stores"
        with lock:
            submitted.append(tags)
            return f"run-{len(submitted)}"

    housekeeper = Registry(settings)  # the orchestrator's own registry, as after a restart
    with DagsterInstance.ephemeral() as instance:
        assert submit_due_syncs(settings, housekeeper, instance, submit=dagster) == []
        after_window = utcnow() + timedelta(seconds=31)
        barrier = threading.Barrier(2)

        def one_pass() -> list[str]:
            barrier.wait()
            return submit_due_syncs(settings, housekeeper, instance, after_window, dagster)

        with ThreadPoolExecutor(2) as pool:
            passes = [f.result() for f in [pool.submit(one_pass), pool.submit(one_pass)]]
        assert sorted(passes) == [[], ["run-1"]]
        assert submit_due_syncs(settings, housekeeper, instance, after_window, dagster) == []
    with housekeeper.session() as session:
        [pending] = session.scalars(select(PendingSync)).all()
    housekeeper.dispose()
    assert pending.run_id == "run-1"
    [tags] = submitted
    assert tags["dagster/partition"] == tags["quarry/store"] == STORE_ID
    assert tags["quarry/store_name"] == "Webhook Shop"
    assert tags["quarry/trigger"] == "webhook"
