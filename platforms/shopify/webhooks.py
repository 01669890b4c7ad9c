"""Shopify webhooks: subscribe a store, verify a delivery, and turn deliveries into one
debounced incremental sync per store (docs/shopify.md, "Webhooks").

- Verification: Shopify signs the raw body with HMAC-SHA256 keyed by the app's client
  secret and sends it base64-encoded in X-Shopify-Hmac-SHA256
  (shopify.dev/docs/apps/build/webhooks/verify-deliveries). The shop is named by
  X-Shopify-Shop-Domain; every Shopify store of that domain whose connection holds a client
  secret is tried, and the delivery is refused unless one matches.
- Duplicates: Shopify may deliver one event more than once, each time with the same
  X-Shopify-Webhook-Id; an id seen in the last 24 hours is acknowledged and ignored.
- Debounce: the first delivery for a store opens a window of `webhook_debounce_seconds`
  and asks for one incremental sync at its end, as a row in the registry
  (registry.pending_syncs); deliveries until that sync is submitted join it. The
  housekeeper submits it (pipelines.sync.triggers), so an API restart loses nothing. The
  periodic sync stays the reconciliation, so a lost delivery costs freshness only.

Delivery ids are remembered in Redis when QUARRY_REDIS_URL is set (every API worker shares
them), else in this process. While Redis cannot be reached the process remembers them
instead: a verified delivery is never refused or lost for it, since what it asks for (the
pending sync) is in the registry, where a repeat only joins it (docs/shopify.md).

The route checks the headers (`signers`) before it reads the body, so a client that names
no connected store is refused without being read.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Literal, Protocol

import redis
from sqlalchemy import select

from platforms.shopify import queries as q
from platforms.shopify.client import ShopifyClient
from platforms.shopify.settings import ShopConnection, normalize_domain
from quarry.crypto import SecretBox
from quarry.errors import QuarryError, Unauthorized
from registry.db import Registry
from registry.models import Store, utcnow
from registry.pending_syncs import request_sync

log = logging.getLogger(__name__)

# What Quarry subscribes to: the datasets it syncs, and the children that change without
# the order's updatedAt (refunds, fulfillments).
TOPICS = (
    "ORDERS_CREATE",
    "ORDERS_UPDATED",
    "ORDERS_DELETE",
    "REFUNDS_CREATE",
    "FULFILLMENTS_CREATE",
    "FULFILLMENTS_UPDATE",
    "CUSTOMERS_CREATE",
    "CUSTOMERS_UPDATE",
    "CUSTOMERS_DELETE",
    "PRODUCTS_CREATE",
    "PRODUCTS_UPDATE",
    "PRODUCTS_DELETE",
    "DRAFT_ORDERS_CREATE",
    "DRAFT_ORDERS_UPDATE",
    "DRAFT_ORDERS_DELETE",
)
WEBHOOK_PATH = "/webhooks/shopify"
DUPLICATE_WINDOW_SECONDS = 24 * 3600
REDIS_PREFIX = "quarry:shopify:webhook:"
# The pending sync's reason, and its runs' quarry/trigger tag.
SYNC_REASON = "webhook"


def subscribe(client: ShopifyClient, base_url: str) -> list[str]:
    """Subscribe the client's store to TOPICS at `base_url` + /webhooks/shopify; the
    problems, one line per refused topic (a missing scope refuses its topics only)."""
    uri = base_url.rstrip("/") + WEBHOOK_PATH
    problems = []
    for topic in TOPICS:
        payload = client.query(q.WEBHOOK_SUBSCRIBE, {"topic": topic, "uri": uri})[
            "webhookSubscriptionCreate"
        ]
        errors = payload.get("userErrors") or []
        if errors:
            problems.append(f"{topic}: " + "; ".join(str(e.get("message")) for e in errors))
    return problems


def signature(secret: str, body: bytes) -> str:
    """The X-Shopify-Hmac-SHA256 value Shopify sends for `body` signed with `secret`."""
    return base64.b64encode(hmac.new(secret.encode(), body, hashlib.sha256).digest()).decode()


def signed_by(secret: str, body: bytes, header: str) -> bool:
    return hmac.compare_digest(signature(secret, body).encode(), header.strip().encode())


class Memory(Protocol):
    def first(self, key: str, seconds: float) -> bool:
        """True the first time `key` is seen within `seconds` (and remember it)."""
        ...


class LocalMemory:
    """Keys with an expiry, in this process."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._keys: dict[str, float] = {}
        self._lock = threading.Lock()

    def first(self, key: str, seconds: float) -> bool:
        now = self._clock()
        with self._lock:
            if len(self._keys) > 100_000:  # a flood of ids must not grow without bound
                self._keys = {k: t for k, t in self._keys.items() if t > now}
            if self._keys.get(key, 0.0) > now:
                return False
            self._keys[key] = now + seconds
            return True


class RedisMemory:
    """Keys with an expiry in Redis (SET NX PX): shared by every API worker and host.
    When Redis cannot be reached, this process's memory answers instead (logged at most
    once a minute): a duplicate then costs at most one more incremental sync, while a
    refused delivery would be retried by Shopify only a few times."""

    def __init__(self, url: str, clock: Callable[[], float] = time.monotonic) -> None:
        # Shopify waits 5 seconds for the answer: an unreachable Redis must not use them.
        self._redis = redis.Redis.from_url(url, socket_timeout=1, socket_connect_timeout=1)
        self._fallback = LocalMemory(clock)
        self._clock = clock
        self._warned_at: float | None = None

    def first(self, key: str, seconds: float) -> bool:
        millis = max(1, int(seconds * 1000))
        try:
            return bool(self._redis.set(REDIS_PREFIX + key, b"1", nx=True, px=millis))
        except redis.RedisError as exc:
            now = self._clock()
            if self._warned_at is None or now - self._warned_at > 60:
                self._warned_at = now
                log.warning("webhook delivery ids kept in this process, Redis unavailable: %s", exc)
            return self._fallback.first(key, seconds)

    def close(self) -> None:
        self._redis.close()


@dataclass(frozen=True)
class Delivery:
    outcome: Literal["duplicate", "scheduled", "joined"]
    store_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class Signers:
    """The connected Shopify stores of the delivery's shop that could have signed it (their
    ids and their apps' client secrets), and the signature the delivery claims."""

    domain: str
    secrets: tuple[tuple[str, str], ...]
    hmac_header: str


def signers(
    registry: Registry, box: SecretBox, shop_domain: str | None, hmac_header: str | None
) -> Signers:
    """The stores that may have signed a delivery with these headers, checked before its
    body is read; Unauthorized when the headers are missing or name no connected store
    with a client secret."""
    if not shop_domain or not hmac_header:
        raise Unauthorized("missing X-Shopify-Shop-Domain or X-Shopify-Hmac-SHA256 header")
    try:
        domain = normalize_domain(shop_domain, "X-Shopify-Shop-Domain")
    except QuarryError:
        raise Unauthorized("X-Shopify-Shop-Domain is not a myshopify domain") from None
    with registry.session() as session:
        stores: Sequence[Store] = session.scalars(
            select(Store).where(Store.domain == domain, Store.platform == "shopify")
        ).all()
        sealed = [(s.id, s.connection_secret) for s in stores]
    secrets = []
    for store_id, secret in sealed:
        try:
            connection = ShopConnection.open(box, secret, "unused")
        except QuarryError:
            continue
        if connection.client_secret:
            secrets.append((store_id, connection.client_secret))
    if not secrets:
        raise Unauthorized("the webhook signature does not match a connected Shopify store")
    return Signers(domain, tuple(secrets), hmac_header)


def receive(
    *,
    registry: Registry,
    memory: Memory,
    debounce_seconds: float,
    signed: Signers,
    webhook_id: str | None,
    body: bytes,
) -> Delivery:
    """Handle one delivery of the shop `signed` names; Unauthorized when none of its stores'
    apps signed `body` (nothing is remembered or started then)."""
    store_ids = [
        store_id
        for store_id, secret in signed.secrets
        if signed_by(secret, body, signed.hmac_header)
    ]
    if not store_ids:
        raise Unauthorized("the webhook signature does not match a connected Shopify store")
    # Only after the signature: a forger must not be able to fill the memory.
    if webhook_id and not memory.first(
        f"id:{signed.domain}:{webhook_id}", DUPLICATE_WINDOW_SECONDS
    ):
        return Delivery("duplicate", tuple(store_ids))
    due_at = utcnow() + timedelta(seconds=debounce_seconds)
    with registry.session() as session:
        opened = [request_sync(session, store_id, SYNC_REASON, due_at) for store_id in store_ids]
    return Delivery("scheduled" if any(opened) else "joined", tuple(store_ids))
