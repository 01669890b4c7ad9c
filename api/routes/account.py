"""GET /v1/account: the key's account. Not plan-gated, so a key can always be verified."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.responses import Response

from api.deps import KeyPrincipal, NoParameters
from api.json import json_response
from api.openapi import problem_responses
from api.schemas import Account

router = APIRouter(prefix="/v1", tags=["account"])


@router.get(
    "/account",
    response_model=Account,
    responses=problem_responses(400, 401, 429, 500),
    summary="The account of the key",
)
async def get_account(principal: KeyPrincipal, _: NoParameters) -> Response:
    """Answers any live key, also when the plan has no API access (`api_enabled` false).
    `store_count` counts the stores this key can read; `scopes` are the key's."""
    return json_response(
        {
            "account_id": principal.account_id,
            "account_name": principal.account_name,
            "subscription_id": principal.subscription_id,
            "api_enabled": principal.api_enabled,
            "store_count": len(principal.store_ids),
            "scopes": list(principal.scopes),
            "currency": principal.currency,
            "timezone": principal.timezone,
        }
    )
