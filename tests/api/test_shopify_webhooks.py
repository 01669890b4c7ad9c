"""POST /webhooks/shopify: deliveries signed with the app's secret start one debounced
incremental sync of their store; forgeries get 401; a repeated delivery id does nothing."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest

from api.main import create_app
from platforms.shopify.settings import ShopConnection
from platforms.shopify.webhooks import RedisMemory, signature
from quarry.crypto import SecretBox
from quarry.settings import Settings
from registry.accounts import create_account, create_store
from registry.db import Registry
from tests.api.conftest import Client, assert_problem

DOMAIN = "webhook-shop.myshopify.com"
SECRET = "app-client-secret-for-webhooks"
STORE_ID = "st_webhook01"
REDIS_URL = "redis://127.0.0.1:6379/0"


class RecordingTrigger:
    """Stands in for Dagster's run submission (pipelines.sync.triggers.DelayedSync)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, float]] = []

    def schedule(self, store_id: str, delay_seconds: float) -> None:
        self.calls.append((store_id, delay_seconds))


@pytest.fixture
def client(quarry_env: Settings, portal, monkeypatch) -> Iterator[Client]:
    monkeypatch.setenv("QUARRY_SHOPIFY_WEBHOOK_DEBOUNCE_SECONDS", "30")
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
    app.state.shopify_sync_trigger = RecordingTrigger()
    one = Client(app, portal)
    yield one
    one.close()
    app.state.reader.close()
    app.state.registry.dispose()


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


def test_a_signed_delivery_schedules_one_debounced_sync(client):
    first = deliver(client, BODY)
    assert first.status_code == 200, first.text
    assert first.json() == {"status": "scheduled"}
    # More changes inside the debounce window join the sync already scheduled.
    second = deliver(client, json.dumps({"id": 7901}).encode())
    assert second.json() == {"status": "joined"}
    assert client.app.state.shopify_sync_trigger.calls == [(STORE_ID, 30.0)]


def test_a_repeated_delivery_id_triggers_nothing(client):
    client.app.state.shopify_webhook_memory = None
    assert deliver(client, BODY, webhook_id="dup-1").json() == {"status": "scheduled"}
    again = deliver(client, BODY, webhook_id="dup-1")
    assert again.status_code == 200
    assert again.json() == {"status": "duplicate"}
    assert len(client.app.state.shopify_sync_trigger.calls) == 1


def test_a_forged_signature_is_refused(client):
    response = deliver(client, BODY, secret="not-the-app-secret")
    assert_problem(response, 401, "Unauthorized")
    assert client.app.state.shopify_sync_trigger.calls == []


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


def test_an_unknown_shop_or_missing_signature_is_refused(client):
    assert_problem(deliver(client, BODY, domain="other.myshopify.com"), 401, "Unauthorized")
    response = client.request("POST", "/webhooks/shopify", content=BODY)
    assert_problem(response, 401, "Unauthorized")
    assert client.app.state.shopify_sync_trigger.calls == []


def test_delivery_ids_and_debounce_are_shared_through_redis():
    """Two API workers (two memories on one Redis) see one delivery id once."""
    key = f"test:{uuid.uuid4()}"
    one, two = RedisMemory(REDIS_URL), RedisMemory(REDIS_URL)
    assert one.first(key, 60) is True
    assert two.first(key, 60) is False
