"""What the API must answer for rows written to the test warehouse, and small readers of
its answers."""

from __future__ import annotations

import json
import re
from datetime import datetime
from decimal import Decimal
from typing import Any

from tests.api.conftest import Client
from warehouse.catalog import dataset

TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$")


def render(row: dict[str, Any], name: str, fields: list[str] | None = None) -> dict[str, Any]:
    """What the API must return for a row written to the warehouse."""
    ds = dataset(name)
    assert ds is not None
    wanted = fields or [f.name for f in ds.record_fields]
    out: dict[str, Any] = {}
    for field in wanted:
        value = row.get(field)
        if isinstance(value, datetime):
            value = value.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        out[field] = value
    return out


def decode(text: str) -> Any:
    return json.loads(text, parse_float=Decimal)


def get_all(client: Client, key: str, name: str, **params: Any) -> list[dict[str, Any]]:
    response = client.get(f"/v1/{name}", key=key, params={"page_size": 250, **params})
    assert response.status_code == 200, response.text
    return decode(response.text)["data"]


def ids(records: list[dict[str, Any]]) -> list[str]:
    return [r["id"] for r in records]
