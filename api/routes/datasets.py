"""GET /v1/datasets: the catalog, the authoritative list of datasets and fields."""

from __future__ import annotations

from functools import cache

from fastapi import APIRouter
from starlette.responses import Response

from api.deps import ApiPrincipal, NoParameters
from api.json import dumps, raw_json_response
from api.openapi import AUTHENTICATED, problem_responses
from api.schemas import DatasetEntry
from warehouse.catalog import DATASETS

router = APIRouter(prefix="/v1", tags=["datasets"])


@cache
def _catalog_json() -> bytes:
    # The catalog is fixed for the life of the process: render it once.
    return dumps([d.public() for d in DATASETS])


@router.get(
    "/datasets",
    response_model=list[DatasetEntry],
    responses=problem_responses(*AUTHENTICATED),
    summary="Datasets and their fields",
)
async def get_datasets(_principal: ApiPrincipal, _: NoParameters) -> Response:
    """Every dataset: `records` ones are served by GET /v1/{dataset}; `query` ones (such as
    `sales`) only by POST /v1/query. Aggregate-only fields never appear in records."""
    return raw_json_response(_catalog_json())
