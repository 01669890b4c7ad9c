"""GET /v1/stores: the stores the key can read."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.responses import Response

from api.deps import ApiPrincipal, NoParameters
from api.json import json_response
from api.openapi import AUTHENTICATED, problem_responses
from api.schemas import Store

router = APIRouter(prefix="/v1", tags=["stores"])


@router.get(
    "/stores",
    response_model=list[Store],
    responses=problem_responses(*AUTHENTICATED),
    summary="Stores the key can read",
)
def get_stores(principal: ApiPrincipal, _: NoParameters) -> Response:
    """Every store of the account within the key's store scope, by name. A store's `id` is
    what `store_ids` takes; `last_synced_at` is null before its first sync."""
    return json_response(
        [
            {
                "id": store.id,
                "name": store.name,
                "myplatform_domain": store.domain,
                "currency": store.currency,
                "timezone": store.timezone,
                "status": store.status,
                "last_synced_at": store.last_synced_at,
            }
            for store in principal.stores
        ]
    )
