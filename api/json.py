"""Rendering response bodies.

Records arrive as JSON text from DuckDB and are only joined here. Everything else goes
through simplejson with `use_decimal`, so an amount is never a float on its way out, and
datetimes become the same UTC format as record timestamps.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

import simplejson
from starlette.responses import Response

from warehouse.records import RecordPage, utc_instant

JSON_MEDIA_TYPE = "application/json"


def _default(value: object) -> object:
    if isinstance(value, datetime):
        return utc_instant(value)
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def dumps(value: Any) -> bytes:
    """Compact UTF-8 JSON; decimals keep their digits, control characters are escaped."""
    return simplejson.dumps(
        value, use_decimal=True, ensure_ascii=False, separators=(",", ":"), default=_default
    ).encode()


def json_response(
    value: Any, status_code: int = 200, headers: Mapping[str, str] | None = None
) -> Response:
    return Response(
        dumps(value), status_code=status_code, media_type=JSON_MEDIA_TYPE, headers=headers
    )


def raw_json_response(body: bytes | str) -> Response:
    """A body that is already JSON text."""
    return Response(body, media_type=JSON_MEDIA_TYPE)


def records_page_response(page: RecordPage) -> Response:
    """`{"data": [...], "page", "page_size", "has_more"}` around DuckDB's record objects."""
    body = "".join(
        (
            '{"data":[',
            ",".join(page.records),
            f'],"page":{page.page},"page_size":{page.page_size},',
            f'"has_more":{"true" if page.has_more else "false"}}}',
        )
    )
    return Response(body.encode(), media_type=JSON_MEDIA_TYPE)
