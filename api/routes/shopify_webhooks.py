"""POST /webhooks/shopify: Shopify's change notifications, outside /v1 and without an API
key. Shopify signs each delivery with the app's secret; the verification, duplicate check
and debounced sync request are platforms.shopify.webhooks', and the housekeeper submits
the sync (pipelines.sync.triggers)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from api.deps import RegistryDep, SettingsDep
from api.json import json_response
from api.openapi import problem_responses
from api.schemas import WebhookReceived
from platforms.shopify.settings import load_shopify_settings
from platforms.shopify.webhooks import (
    WEBHOOK_PATH,
    LocalMemory,
    Memory,
    RedisMemory,
    receive,
    signers,
)
from quarry.crypto import SecretBox
from quarry.errors import Unauthorized

router = APIRouter(tags=["webhooks"])

# Shopify sends each once; two of one would leave which counts to the parser.
_SINGLE_HEADERS = ("x-shopify-shop-domain", "x-shopify-hmac-sha256", "x-shopify-webhook-id")


def _memory(request: Request) -> Memory:
    state = request.app.state
    if getattr(state, "shopify_webhook_memory", None) is None:
        url = state.settings.redis_url
        state.shopify_webhook_memory = RedisMemory(url) if url else LocalMemory()
    return state.shopify_webhook_memory


def _debounce_seconds(request: Request) -> float:
    # QUARRY_SHOPIFY_* read once per app, on the first delivery (not at import).
    state = request.app.state
    if getattr(state, "shopify_webhook_debounce", None) is None:
        state.shopify_webhook_debounce = load_shopify_settings().webhook_debounce_seconds
    return float(state.shopify_webhook_debounce)


@router.post(
    WEBHOOK_PATH,
    status_code=200,
    response_model=WebhookReceived,
    responses=problem_responses(401),
)
async def shopify_webhook(
    request: Request, settings: SettingsDep, registry: RegistryDep
) -> Response:
    """Verify a Shopify delivery (401 when forged), ignore a repeat of an
    X-Shopify-Webhook-Id seen in the last 24 hours, and ask (in the registry) for one
    incremental sync of the store per debounce window. Answers at once: Shopify waits 5
    seconds at most. The headers are checked before the body is read, so a client naming
    no connected store is refused at once, however slowly it sends a body."""
    headers = request.headers
    for name in _SINGLE_HEADERS:
        if len(headers.getlist(name)) > 1:
            raise Unauthorized(f"send exactly one {name} header")
    signed = await run_in_threadpool(
        signers,
        registry,
        SecretBox(settings.fernet_keys),
        headers.get("x-shopify-shop-domain"),
        headers.get("x-shopify-hmac-sha256"),
    )
    body = await request.body()
    delivery = await run_in_threadpool(
        receive,
        registry=registry,
        memory=_memory(request),
        debounce_seconds=_debounce_seconds(request),
        signed=signed,
        webhook_id=headers.get("x-shopify-webhook-id"),
        body=body,
    )
    return json_response({"status": delivery.outcome})
